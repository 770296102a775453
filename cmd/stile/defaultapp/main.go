// Command defaultapp is the tenant module `stile dev` and `stile build` use
// when no package is named. Its kinds are in package app; your own module
// replaces it (see examples/).
package main

import (
	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(app.App()) }

func main() {}
