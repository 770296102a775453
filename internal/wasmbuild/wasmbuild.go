// Package wasmbuild compiles a tenant package (a Go main package that
// registers with runtime and calls runtime.Serve) to the WASI reactor
// module every host runs. `stile build`, `stile dev`, `stile bench` and the
// test suites import it.
package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultPackage is the tenant module used when none is named.
const DefaultPackage = "github.com/stile-run/stile/cmd/stile/defaultapp"

// BuildWasm compiles the main package pkg (an import path or a ./relative
// directory, resolved in dir) to a WASI reactor at out. Go's build cache
// makes a rebuild of unchanged code take about a second. The module keeps
// its name section, so a trap's Wasm stack trace names functions; see
// BuildDeploy for the module that is deployed.
func BuildWasm(ctx context.Context, dir, pkg, out string) error {
	return build(ctx, dir, pkg, out)
}

// BuildDeploy is BuildWasm for the module `stile build` deploys: without
// the Wasm name section (-ldflags=-s), which is a tenth of its gzipped
// size. A Go panic still prints function names (from Go's own tables);
// only the engine's Wasm stack trace of a trap loses them.
func BuildDeploy(ctx context.Context, dir, pkg, out string) error {
	return build(ctx, dir, pkg, out, "-ldflags=-s")
}

func build(ctx context.Context, dir, pkg, out string, flags ...string) error {
	if pkg == "" {
		pkg = DefaultPackage
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	tmp := out + ".tmp"
	args := append([]string{"build", "-buildmode=c-shared", "-trimpath"}, flags...)
	cmd := exec.CommandContext(ctx, GoTool(), append(args, "-o", tmp, pkg)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("build %s for GOOS=wasip1 GOARCH=wasm: %w\n%s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	return os.Rename(tmp, out)
}

// GoTool is the go command to run: $GOROOT/bin/go when the GOROOT
// variable names a toolchain, else the go on PATH.
//
// Not runtime.GOROOT (deprecated): it is where the binary was built, which
// a shipped stile binary may not find, and `go env GOROOT` needs the go
// command it is looking for. The go on PATH is the right one where it
// matters: the user's toolchain builds the user's module, and under `go
// test` and `go generate` the go command puts its own GOROOT/bin first on
// PATH, so tests build with the toolchain that runs them.
func GoTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// ErrNoNode says Node, which runs js/wasm tests, is not installed.
var ErrNoNode = errors.New("node is not installed")

// TestUnderNode runs the js/wasm tests of the package in dir matching
// run, under Node with Go's own wasm_exec runner, and returns their
// verbose output (the caller checks that tests ran, not only that none
// failed).
func TestUnderNode(dir, run string) (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoNode, err)
	}
	goTool := GoTool()
	root, err := exec.Command(goTool, "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("find GOROOT: %w", err)
	}
	cmd := exec.Command(goTool, "test", "-count=1", "-v", "-run", run,
		"-exec", filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", "go_js_wasm_exec"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
