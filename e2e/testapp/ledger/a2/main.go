// Command a2 serves the ledger module at variant a2.
package main

import (
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(ledger.App("a2")) }

func main() {}
