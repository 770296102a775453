package runtime_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

func scheduledApp(cronExpr string, declare bool) *runtime.App {
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "report.daily"})
	if declare {
		app.Schedule(runtime.Schedule{Name: "daily-report", Cron: cronExpr,
			Job: api.EnqueueRequest{Kind: "report.daily", Args: json.RawMessage(`{"scope":"all"}`)}})
	}
	return app
}

// TestModuleSchedulesApplyToEveryTenant: a schedule the module declares is
// every tenant's from its first request, runs its periods, refuses
// per-tenant changes, follows the module when it changes, and goes when
// the module drops it.
func TestModuleSchedulesApplyToEveryTenant(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h := stiletest.New(t, stiletest.Config{App: scheduledApp("@every 1m", true), DataDir: dir})
	for _, name := range []string{"acme", "globex"} {
		ten := h.Tenant(name)
		list, err := ten.Schedules(ctx) // its first request: the module's schedules arrive
		require.NoError(t, err)
		require.Len(t, list, 1)
		require.Equal(t, "daily-report", list[0].Name)
		require.True(t, list[0].Module)
	}
	h.Advance(time.Minute)
	l, err := h.Tenant("acme").List(ctx, "", "", "report.daily", "", 10)
	require.NoError(t, err)
	require.Len(t, l.Jobs, 1, "the period enqueued the job")
	require.Contains(t, l.Jobs[0].Tags, "schedule:daily-report")

	_, err = h.Tenant("acme").PutSchedule(ctx, "daily-report", api.ScheduleRequest{Cron: "@hourly", Job: api.EnqueueRequest{Kind: "report.daily"}})
	require.Equal(t, api.CodeModuleSchedule, client.Code(err))
	require.ErrorContains(t, err, "declared by the tenant module")
	require.Equal(t, api.CodeModuleSchedule, client.Code(h.Tenant("acme").DeleteSchedule(ctx, "daily-report")))
	_, err = h.Tenant("acme").PutSchedule(ctx, "mine", api.ScheduleRequest{Cron: "@hourly", Job: api.EnqueueRequest{Kind: "report.daily"}})
	require.NoError(t, err, "a tenant's own schedules work beside the module's")
	require.NoError(t, h.Close())

	// A new deploy changes the module's schedule, then drops it.
	h = stiletest.New(t, stiletest.Config{App: scheduledApp("@hourly", true), DataDir: dir})
	list, err := h.Tenant("acme").Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "@hourly", list[0].Cron, "the module's change reached the tenant")
	require.False(t, list[0].LastAt == nil, "with its history")
	require.NoError(t, h.Close())
	h = stiletest.New(t, stiletest.Config{App: scheduledApp("", false), DataDir: dir})
	list, err = h.Tenant("acme").Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1, "the module's schedule went with it; the tenant's stays")
	require.Equal(t, "mine", list[0].Name)
}

func TestModuleScheduleDeclarationsAreChecked(t *testing.T) {
	for name, s := range map[string]runtime.Schedule{
		"bad name": {Name: "no spaces", Cron: "@hourly", Job: api.EnqueueRequest{Kind: "k"}},
		"bad cron": {Name: "s", Cron: "every day", Job: api.EnqueueRequest{Kind: "k"}},
		"unique":   {Name: "s", Cron: "@hourly", Job: api.EnqueueRequest{Kind: "k", UniqueKey: "u"}},
	} {
		require.Panics(t, func() { runtime.NewApp().Schedule(s) }, name)
	}
}
