package main

import (
	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(refunds.App()) }

func main() {}
