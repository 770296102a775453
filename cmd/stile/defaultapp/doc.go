// Command defaultapp is the tenant module `stile dev` and `stile build` use
// when no package is named. Its kinds are in package app; your own module
// replaces it (see examples/).
package main
