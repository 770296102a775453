package main

import (
	"github.com/stile-run/stile/examples/emails"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(emails.App()) }

func main() {}
