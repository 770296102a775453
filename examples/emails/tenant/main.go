// Command tenant is the example's tenant module: build it with
// `stile build ./examples/emails/tenant` or serve it with `stile dev`.
package main

import (
	"github.com/stile-run/stile/examples/emails"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(emails.App()) }

func main() {}
