package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/atomicfile"
)

func TestWriteReplacesTheFileWholeAndLeavesNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "alarms.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, atomicfile.Write(path, []byte("new"), 0o600))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")

	require.Error(t, atomicfile.Write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600), "a directory that does not exist is an error")

	require.NoError(t, atomicfile.WriteUnsynced(path, []byte("newer"), 0o644))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "newer", string(b))
	st, err = os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left")
	require.Error(t, atomicfile.WriteUnsynced(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600))
}
