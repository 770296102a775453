package runtime_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
