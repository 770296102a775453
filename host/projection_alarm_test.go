package host_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An append while the projections' catch-up is already due leaves the
// tenant's alarm where it is (at the edge each change of a Durable
// Object's alarm is billed as a row written): the alarm comes at the time
// of the first append not yet applied, and applies both appends at once.
func TestAnAppendLeavesADueCatchUpWhereItIs(t *testing.T) {
	t.Parallel()
	d := &deployment{t: t, dir: t.TempDir()}
	d.deploy(tallyApp(1, 1))
	d.appendT(1)
	d.fire()
	require.Equal(t, int64(1), d.tally())

	d.appendT(1)
	first := d.h.Now().UnixMilli()
	require.Equal(t, first, d.m.AlarmAt("acme"), "the append set the alarm to now")
	d.h.Clock().Advance(10 * time.Millisecond) // time passes; no alarm runs
	d.appendT(1)
	require.Equal(t, first, d.m.AlarmAt("acme"), "the second append left the alarm at the first's time")

	require.Equal(t, 1, d.h.Advance(0), "the alarm is due")
	require.Equal(t, int64(3), d.tally(), "one alarm applied both appends")
	st := d.status().Live
	require.Equal(t, "current", st.Status)
	require.Equal(t, int64(3), st.Checkpoint)
	at := d.m.AlarmAt("acme")
	require.True(t, at == 0 || at > d.h.Now().UnixMilli(), "once it ran, nothing is due: the alarm is at %d, now %d", at, d.h.Now().UnixMilli())
}
