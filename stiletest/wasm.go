package stiletest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// builds caches the modules BuildWasm built, by package, for the life of
// the test binary.
var builds struct {
	mu  sync.Mutex
	pkg map[string]*build
}

type build struct {
	once sync.Once
	wasm []byte
	err  error
}

// BuildWasm compiles the tenant main package pkg (an import path, or a
// ./relative directory from the test's package) to the WASI reactor module
// the hosts run, once per test binary, and returns it; the test fails if
// it does not build. The module keeps its name section, so a trap's stack
// trace names functions.
func BuildWasm(tb testing.TB, pkg string) []byte {
	tb.Helper()
	wasm, err := buildWasm(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return wasm
}

func buildWasm(pkg string) ([]byte, error) {
	builds.mu.Lock()
	if builds.pkg == nil {
		builds.pkg = map[string]*build{}
	}
	b, ok := builds.pkg[pkg]
	if !ok {
		b = &build{}
		builds.pkg[pkg] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.wasm, b.err = compile(pkg) })
	return b.wasm, b.err
}

func compile(pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "stiletest-wasm-")
	if err != nil {
		return nil, fmt.Errorf("stiletest: build %s: %w", pkg, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "tenant.wasm")
	if err := wasmbuild.BuildWasm(context.Background(), "", pkg, out); err != nil {
		return nil, fmt.Errorf("stiletest: %w", err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("stiletest: build %s: %w", pkg, err)
	}
	return wasm, nil
}
