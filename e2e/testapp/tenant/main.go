package main

import (
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(testapp.App()) }

func main() {}
