package dosql

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A tenant's database runs with the synchronous setting asked for:
// NORMAL by default (1), FULL with stile dev --sync full (2).
func TestOpenSyncSetsSynchronous(t *testing.T) {
	t.Parallel()
	for sync, want := range map[Sync]int{"": 1, SyncNormal: 1, SyncFull: 2} {
		db, err := OpenSync(filepath.Join(t.TempDir(), "t.sqlite"), sync)
		require.NoError(t, err)
		db.host = true // the host's own statement, as Open's are
		st, _, err := db.conn.Prepare(`PRAGMA synchronous`)
		db.host = false
		require.NoError(t, err)
		require.True(t, st.Step())
		require.Equal(t, want, st.ColumnInt(0), "synchronous %q", sync)
		require.NoError(t, st.Close())
		require.NoError(t, db.Close())
	}
	_, err := OpenSync(filepath.Join(t.TempDir(), "t.sqlite"), "OFF")
	require.ErrorContains(t, err, "use normal or full")
	s, err := ParseSync("full")
	require.NoError(t, err)
	require.Equal(t, SyncFull, s)
}
