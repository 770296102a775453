package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stile-run/stile/internal/wasmbuild"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/host/wazerohost"
)

var (
	wasmOnce sync.Once
	wasmPath string
	wasmErr  error
)

// testWasm builds e2e/testapp/tenant to a .wasm once per test binary.
func testWasm(t testing.TB) []byte {
	t.Helper()
	b := testWasmBytes()
	require.NoError(t, wasmErr)
	return b
}

func testWasmBytes() []byte {
	wasmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stile-e2e-")
		if err != nil {
			wasmErr = err
			return
		}
		wasmPath = filepath.Join(dir, "tenant.wasm")
		wasmErr = wasmbuild.BuildWasm(context.Background(), "..", "./e2e/testapp/tenant", wasmPath)
	})
	if wasmErr != nil {
		return nil
	}
	b, err := os.ReadFile(wasmPath)
	if err != nil {
		wasmErr = err
		return nil
	}
	return b
}

func TestWazero(t *testing.T) {
	t.Parallel()
	f := newFaults()
	factory, err := wazerohost.New(context.Background(), wazerohost.Config{
		Wasm: testWasm(t), CacheDir: filepath.Join(os.TempDir(), "stile-test-wazero-cache"), Fault: f.check})
	require.NoError(t, err)
	runSuite(t, newInProcess(t, factory, f))
}
