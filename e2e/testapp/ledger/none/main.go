// Command none serves the ledger module at variant none.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(ledger.App("none")) }

func main() {}
