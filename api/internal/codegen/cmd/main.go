// Command codegen runs codegen.Write for package api: go generate ./api.
package main

import (
	"fmt"
	"os"

	"github.com/stile-run/stile/api/internal/codegen"
)

func main() {
	if err := codegen.Write(".", "../docs/API.md"); err != nil {
		fmt.Fprintln(os.Stderr, "codegen:", err)
		os.Exit(1)
	}
}
