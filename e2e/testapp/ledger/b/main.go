// Command b serves the ledger module at variant b.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(ledger.App("b")) }

func main() {}
