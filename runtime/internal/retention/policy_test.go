package retention

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

const hour = 3600_000

func TestEffectiveTakesOnlyTheFieldsTheTenantSet(t *testing.T) {
	mod := api.DefaultRetention
	over := api.Retention{CompletedMs: hour, DeadMs: 0, AuditMs: 5 * hour}
	got := Effective(mod, over, api.RetentionCompletedMs|api.RetentionDeadMs)
	require.Equal(t, int64(hour), got.CompletedMs)
	require.Zero(t, got.DeadMs, "a tenant may keep dead jobs forever")
	require.Equal(t, mod.AuditMs, got.AuditMs, "a field not set follows the module")
	require.Equal(t, []string{"completed_ms", "dead_ms"}, Overridden(api.RetentionCompletedMs|api.RetentionDeadMs))
	require.Equal(t, []string{}, Overridden(0))
}

func TestNext(t *testing.T) {
	p := api.Retention{CompletedMs: 24 * hour, DeadMs: 7 * 24 * hour}
	now := int64(1000 * hour)
	require.Equal(t, now, Next(p, Oldest{}, true, now), "a full slice looks again at once")
	require.Zero(t, Next(p, Oldest{}, false, now), "nothing stored: no look until a write")
	o := Oldest{Completed: now - hour, Dead: now - 2*hour}
	require.Equal(t, now-hour+24*hour, Next(p, o, false, now), "the earliest kind's oldest row")
	o = Oldest{Completed: now - 48*hour}
	require.Equal(t, now+hour, Next(p, o, false, now), "a row kept past its window does not make the alarm spin")
	o = Oldest{Completed: now - 24*hour + 60_000}
	require.Equal(t, now+hour, Next(p, o, false, now), "rows coming due a minute apart go together, within the slack")
	o = Oldest{Cancelled: now - 48*hour}
	require.Zero(t, Next(p, o, false, now), "a kind kept forever is never due")
}

func TestAfterWriteBringsTheLookForward(t *testing.T) {
	p := api.Retention{CompletedMs: 24 * hour, DeadMs: 7 * 24 * hour}
	now := int64(1000 * hour)
	require.Equal(t, now+25*hour, AfterWrite(p, now+7*24*hour, now), "a job completed now goes in a day, and the slack")
	require.Equal(t, now+hour, AfterWrite(p, now+hour, now), "an earlier look stays")
	require.Equal(t, now+5, AfterWrite(api.Retention{}, now+5, now))
}

func TestSlack(t *testing.T) {
	require.Equal(t, int64(hour), Slack(api.DefaultRetention), "a day's window: an hour")
	require.Equal(t, int64(2500), Slack(api.Retention{AuditMs: 60_000}), "a minute's: 2.5 s")
	require.Equal(t, int64(1000), Slack(api.Retention{}), "none: a second")
}

func TestCutoff(t *testing.T) {
	p := api.Retention{CompletedMs: hour}
	c, ok := Cutoff(p, Completed, 5*hour)
	require.True(t, ok)
	require.Equal(t, int64(4*hour), c)
	_, ok = Cutoff(p, Dead, 5*hour)
	require.False(t, ok)
}

func TestPlannedCountsTheSlackFromTheLastLook(t *testing.T) {
	p := api.Retention{CompletedMs: 24 * hour}
	o := Oldest{Completed: 10 * hour}
	require.Equal(t, int64(34*hour), Planned(p, o, 0), "no look known: when the oldest comes due")
	require.Equal(t, int64(34*hour), Planned(p, o, 30*hour), "a look long enough before does not put it off")
	require.Equal(t, int64(34*hour+30*60_000), Planned(p, o, 33*hour+30*60_000), "a look half an hour before: a slack after it")
	require.Zero(t, Planned(p, Oldest{}, 30*hour), "nothing to delete: no look")
	require.Zero(t, Planned(api.Retention{}, o, 0), "everything kept: no look")
}
