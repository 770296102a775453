package main

import (
	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(app.App()) }

func main() {}
