package wasmbuild_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// TestPackageSizesNameTheModulesPackages: the built-in module's code is
// attributed to its packages, Stile's runtime among the largest, and the
// sum is the module's code.
func TestPackageSizesNameTheModulesPackages(t *testing.T) {
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "m.wasm")
	require.NoError(t, wasmbuild.BuildWasm(ctx, "../..", "", out))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	deps, err := wasmbuild.Deps(ctx, "../..", "")
	require.NoError(t, err)
	ps, err := wasmbuild.PackageSizes(b, deps)
	require.NoError(t, err)
	sizes := map[string]int{}
	total := 0
	for _, p := range ps {
		sizes[p.Package] = p.Bytes
		total += p.Bytes
	}
	require.Greater(t, sizes["github.com/stile-run/stile/runtime"], 50_000)
	require.Greater(t, sizes["runtime"], 100_000, "Go's own runtime")
	require.Greater(t, sizes["github.com/stile-run/stile/api"], 10_000)
	require.Less(t, sizes["(type equality, wrappers and the rest)"], total/10, "nearly all code is attributed")
	// The built-in module uses no typed events, commands or job args:
	// the typed API must not link JSON decoding into it (runtime/types.go).
	require.Less(t, sizes["encoding/json"], 20_000, "encoding/json is linked into the built-in module")
	require.Greater(t, total, len(b)/3)

	stripped := filepath.Join(t.TempDir(), "s.wasm")
	require.NoError(t, wasmbuild.BuildDeploy(ctx, "../..", "", stripped))
	sb, err := os.ReadFile(stripped)
	require.NoError(t, err)
	_, err = wasmbuild.PackageSizes(sb, deps)
	require.ErrorContains(t, err, "no name section")
}
