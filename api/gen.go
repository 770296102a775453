//go:build ignore

// gen writes json_gen.go: the JSON writers and strict readers of the
// package's types, generated from their definitions by
// api/internal/jsongen. Run it with go generate ./api; json_gen_test.go
// fails when the types and the generated code differ.
package main

import (
	"fmt"
	"os"

	"github.com/stile-run/stile/api/internal/jsongen"
)

func main() {
	out, err := jsongen.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(jsongen.Output, out, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
