package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/atomicfile"
)

// TestRevokedFileFailsClosed: a revoked list that is gone or unreadable is
// an error (the server then refuses scoped tokens), never "nothing is
// revoked".
func TestRevokedFileFailsClosed(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "not-yet", "revoked")
	list := revokedFile(path)
	_, err := list()
	require.Error(t, err, "a missing list revokes everything scoped, not nothing")

	require.NoError(t, ensureRevokedFile(path), "the data directory is made if need be")
	ids, err := list()
	require.NoError(t, err)
	require.Empty(t, ids)

	require.NoError(t, os.Remove(path))
	_, err = list()
	require.Error(t, err, "a list removed since it was read is not served from the cache")

	require.NoError(t, os.Mkdir(path, 0o700))
	_, err = list()
	require.Error(t, err, "a list that cannot be read")
}

// TestRevokedFileSeesEveryRewrite: the list is cached by the file it was
// read from. A rewrite that leaves the same time and size (a read racing
// a rewrite within the clock's granularity) is still read again.
func TestRevokedFileSeesEveryRewrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "revoked")
	require.NoError(t, atomicfile.Write(path, []byte("old-1\n"), 0o600))
	st, err := os.Stat(path)
	require.NoError(t, err)
	list := revokedFile(path)
	ids, err := list()
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"old-1": true}, ids)

	require.NoError(t, atomicfile.Write(path, []byte("new-1\n"), 0o600))
	require.NoError(t, os.Chtimes(path, time.Time{}, st.ModTime()))
	ids, err = list()
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"new-1": true}, ids)

	// Ids split on tabs too, as the Worker splits them.
	require.NoError(t, atomicfile.Write(path, []byte("a\tb,c d\r\n"), 0o600))
	ids, err = list()
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "d": true}, ids)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file is left behind")
}
