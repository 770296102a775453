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

// builds caches what the harness built (tenant modules, edge executors),
// by what was built, for the life of the test binary: tests that run in
// parallel wait for one build instead of compiling the same packages side
// by side, which on an empty build cache is most of their time.
var builds struct {
	mu   sync.Mutex
	byID map[string]*build
}

type build struct {
	once  sync.Once
	files map[string][]byte // by file name
	err   error
}

// cached returns the files make builds for id, building them once.
func cached(id string, make func() (map[string][]byte, error)) (map[string][]byte, error) {
	builds.mu.Lock()
	if builds.byID == nil {
		builds.byID = map[string]*build{}
	}
	b, ok := builds.byID[id]
	if !ok {
		b = &build{}
		builds.byID[id] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.files, b.err = make() })
	return b.files, b.err
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
	files, err := cached("module "+pkg, func() (map[string][]byte, error) {
		wasm, err := compile(pkg)
		return map[string][]byte{moduleFile: wasm}, err
	})
	return files[moduleFile], err
}

// moduleFile names a tenant module among the files a build cached.
const moduleFile = "tenant.wasm"

func compile(pkg string) ([]byte, error) {
	dir, err := os.MkdirTemp("", "stiletest-wasm-")
	if err != nil {
		return nil, fmt.Errorf("stiletest: build %s: %w", pkg, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, moduleFile)
	if err := wasmbuild.BuildWasm(context.Background(), "", pkg, out); err != nil {
		return nil, fmt.Errorf("stiletest: %w", err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("stiletest: build %s: %w", pkg, err)
	}
	return wasm, nil
}
