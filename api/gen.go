//go:build ignore

// gen writes what package api derives from its source (api/internal/apigen):
// json_gen.go, the JSON writers and strict readers of the package's types,
// and codes_gen.go with the table of codes in docs/API.md, from the Code
// constants. Run it with go generate ./api; the tests fail when an output
// is stale.
package main

import (
	"fmt"
	"os"

	"github.com/stile-run/stile/api/internal/apigen"
)

func main() {
	out, err := apigen.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(apigen.Output, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := apigen.WriteCodes(".", "../docs/API.md"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
