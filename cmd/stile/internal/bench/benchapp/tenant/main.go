// Command tenant is the bench module's main package, built to .wasm for
// the wazero case of `stile bench --only projections`.
package main

import (
	"github.com/stile-run/stile/cmd/stile/internal/bench/benchapp"
	"github.com/stile-run/stile/runtime"
)

func init() { runtime.Serve(benchapp.App()) }

func main() {}
