// Command tenant is the test module's main package, built to .wasm for the
// wazero and workerd layers of the conformance suite.
package main

import (
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(testapp.App()) }

func main() {}
