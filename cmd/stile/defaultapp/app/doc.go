// Package app is the registry of the built-in tenant module (its main
// package is the directory above): general-purpose kinds to try Stile
// with, and what `stile bench` measures natively.
package app
