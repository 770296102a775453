package host

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The alarm file holds every alarm as early as the tenants want it the
// moment it moves earlier; alarms that fired leave their old entries until
// tidyAfter of them have, then the file holds the tenants' alarms exactly.
func TestAlarmFileIsNeverLaterThanTheTenants(t *testing.T) {
	path := filepath.Join(t.TempDir(), "alarms.json")
	f, lost, err := loadAlarms(path)
	require.NoError(t, err)
	require.NotEmpty(t, lost, "no file yet")
	read := func() map[string]int64 {
		g, lost, err := loadAlarms(path)
		require.NoError(t, err)
		require.Empty(t, lost)
		return g.snapshot()
	}
	require.NoError(t, f.note("a", 100))
	require.NoError(t, f.note("b", 200))
	require.Equal(t, map[string]int64{"a": 100, "b": 200}, read())
	require.NoError(t, f.note("a", 150), "later: the file keeps 100")
	require.Equal(t, map[string]int64{"a": 100, "b": 200}, read())
	require.NoError(t, f.note("a", 50))
	require.Equal(t, map[string]int64{"a": 50, "b": 200}, read(), "earlier: written at once")

	tenants := map[string]int64{"a": 5000, "b": 200}
	alarms := func() map[string]int64 { return tenants }
	for range tidyAfter - 1 {
		require.NoError(t, f.afterFiring(1, alarms))
	}
	require.Equal(t, map[string]int64{"a": 50, "b": 200}, read(), "a fired alarm's entry stays until the tidy")
	require.NoError(t, f.afterFiring(1, alarms))
	require.Equal(t, tenants, read(), "tidied")

	require.NoError(t, f.afterFiring(tidyAfter-1, alarms))
	require.NoError(t, f.note("c", 10))
	tenants = map[string]int64{"b": 200}
	require.NoError(t, f.afterFiring(1, alarms), "the note's write started the count again")
	require.Equal(t, map[string]int64{"a": 5000, "b": 200, "c": 10}, read())
}
