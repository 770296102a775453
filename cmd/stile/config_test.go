package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeConfig is the step of stile build that writes wrangler.toml: it
// writes one where none is, keeps a file it would not change (the user's
// own keys included), and updates only the keys Stile owns.
func TestWriteConfigKeepsTheUsersKeys(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	config, out := filepath.Join(dir, "wrangler.toml"), filepath.Join(dir, "build")

	action, err := writeConfig(config, out, "", true)
	require.NoError(t, err)
	require.Equal(t, "wrote", action)
	b, err := os.ReadFile(config)
	require.NoError(t, err)
	require.Contains(t, string(b), "name = \"shop\"\nmain = \"build/edge.mjs\"")

	mine := "\n[vars]\nPROVIDER_URL = \"https://provider.example\" # ours\n"
	require.NoError(t, os.WriteFile(config, append(b, mine...), 0o644))
	action, err = writeConfig(config, out, "", true)
	require.NoError(t, err)
	require.Equal(t, "kept", action, "nothing of Stile's changed")
	after, err := os.ReadFile(config)
	require.NoError(t, err)
	require.Equal(t, string(b)+mine, string(after))

	action, err = writeConfig(config, out, "", false) // built without --handlers now
	require.NoError(t, err)
	require.Equal(t, "updated", action)
	after, err = os.ReadFile(config)
	require.NoError(t, err)
	require.Contains(t, string(after), "name = \"shop\"\nmain = \"build/worker.mjs\"", "the entry is Stile's")
	require.True(t, strings.HasSuffix(string(after), mine), "the user's keys survive an update")

	_, err = writeConfig(config, out, "Shop Jobs", true)
	require.ErrorContains(t, err, `"shop-jobs" would do`)
}
