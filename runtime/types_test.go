package runtime_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/runtime"
)

type shipped struct{}

func (shipped) EventType() string { return "Shipped" }

type badName struct{}

func (badName) EventType() string { return "no spaces" }

type ship struct{}

func (ship) CommandType() string { return "Ship" }

func TestRegisteringATypeTwiceOrByPointerIsABugFoundAtStart(t *testing.T) {
	t.Parallel()
	require.NotPanics(t, func() { runtime.NewApp().RegisterEventTypes(shipped{}).RegisterCommandTypes(ship{}) })
	require.PanicsWithValue(t, `stile: event type "Shipped" is registered twice (runtime_test.shipped and runtime_test.shipped)`,
		func() { runtime.NewApp().RegisterEventTypes(shipped{}, shipped{}) })
	require.PanicsWithValue(t, "stile: event type *runtime_test.shipped: register the value type, not a pointer",
		func() { runtime.NewApp().RegisterEventTypes(&shipped{}) })
	require.Panics(t, func() { runtime.NewApp().RegisterEventTypes(badName{}) })
	require.PanicsWithValue(t, `stile: command type "Ship" is registered twice (runtime_test.ship and runtime_test.ship)`,
		func() { runtime.NewApp().RegisterCommandTypes(ship{}, ship{}) })
}
