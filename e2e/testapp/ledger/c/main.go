// Command c serves the ledger module at variant c.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(ledger.App("c")) }

func main() {}
