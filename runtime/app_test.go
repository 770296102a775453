package runtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

func TestRegisterJobFillsDefaults(t *testing.T) {
	t.Parallel()
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "a.b"})
	k, ok := app.Kind("a.b")
	require.True(t, ok)
	require.Equal(t, "default", k.Queue)
	require.Equal(t, runtime.DefaultMaxAttempts, k.MaxAttempts)
	require.Equal(t, runtime.DefaultLease, k.Lease)
	require.Equal(t, runtime.DefaultBackoff, k.Backoff)
	require.Equal(t, runtime.DefaultMaxBackoff, k.MaxBackoff)
	require.Equal(t, []string{"a.b"}, app.Kinds())
}

func TestRegisterJobRefusesMistakesAtStart(t *testing.T) {
	t.Parallel()
	for name, k := range map[string]runtime.JobKind{
		"empty name":    {},
		"bad name":      {Name: "has space"},
		"bad queue":     {Name: "k", Queue: "a/b"},
		"priority":      {Name: "k", Priority: 10},
		"attempts":      {Name: "k", MaxAttempts: 1001},
		"short lease":   {Name: "k", Lease: time.Millisecond},
		"backoff order": {Name: "k", Backoff: time.Minute, MaxBackoff: time.Second},
	} {
		require.Panics(t, func() { runtime.NewApp().RegisterJob(k) }, name)
	}
	app := runtime.NewApp().RegisterJob(runtime.JobKind{Name: "k"})
	require.PanicsWithValue(t, `stile: job kind "k" is registered twice`, func() { app.RegisterJob(runtime.JobKind{Name: "k"}) })
}

func TestAggregateTimeoutsOverrideReactionsOfTheirKind(t *testing.T) {
	t.Parallel()
	decide := func(struct{}, runtime.Command) (runtime.Decision, error) { return runtime.Emit(), nil }
	app := runtime.NewApp().
		RegisterPolicy(runtime.Policy{Name: "before", Events: []string{"E"}}).
		RegisterProcess(runtime.Process{Name: "proc", Events: []string{"E"}, Correlate: func(api.Event) (string, error) { return "", nil }})
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "bulk", Decide: decide, PolicyTimeout: 2 * time.Minute})
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "slow", Decide: decide, ProcessTimeout: time.Minute})
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "plain", Decide: decide})
	app.RegisterPolicy(runtime.Policy{Name: "after", Events: []string{"E"}})

	// Whatever the order of registration.
	for _, c := range []struct {
		reaction, aggregate string
		ms                  int64
	}{
		{"before", "bulk", 120_000}, {"after", "bulk", 120_000}, {"proc", "bulk", 0},
		{"before", "slow", 0}, {"proc", "slow", 60_000}, {"before", "plain", 0}, {"before", "nope", 0},
	} {
		require.Equal(t, c.ms, app.TimeoutOverride(c.reaction, c.aggregate), "%s for %s", c.reaction, c.aggregate)
	}

	for _, d := range []time.Duration{time.Microsecond, 2 * time.Hour, -time.Second} {
		require.Panics(t, func() {
			runtime.RegisterAggregate(runtime.NewApp(), runtime.Aggregate[struct{}]{Name: "x", Decide: decide, PolicyTimeout: d})
		}, "%s", d)
	}
}

func TestRegisterProjectionRefusesMistakesAtStart(t *testing.T) {
	t.Parallel()
	ok := runtime.Projection{Name: "p", Events: []string{"A", "B"}, Tables: []string{`CREATE TABLE {t} (k TEXT PRIMARY KEY) STRICT`},
		Handle: func(*runtime.ProjectionTx, api.Event) error { return nil }}
	require.NotPanics(t, func() { runtime.NewApp().RegisterProjection(ok) })
	for name, mutate := range map[string]func(*runtime.Projection){
		"type listed twice": func(p *runtime.Projection) { p.Events = []string{"A", "B", "A"} },
		"invalid type":      func(p *runtime.Projection) { p.Events = []string{"no spaces"} },
		"no events":         func(p *runtime.Projection) { p.Events = nil },
		"no handler":        func(p *runtime.Projection) { p.Handle = nil },
		"batch over 1000":   func(p *runtime.Projection) { p.Batch = 1001 },
	} {
		p := ok
		mutate(&p)
		require.Panics(t, func() { runtime.NewApp().RegisterProjection(p) }, name)
	}
	other := ok
	other.Name = "p_1_x"
	require.Panics(t, func() { runtime.NewApp().RegisterProjection(ok).RegisterProjection(other) }, "names whose tables could collide")
}
