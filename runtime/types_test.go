package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
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

// byPointer validates with a pointer receiver, as Go code often does.
type byPointer struct {
	N int `json:"n"`
}

func (byPointer) Kind() string { return "by.pointer" }

func (b *byPointer) Validate() error {
	if b.N < 0 {
		return errors.New("n is negative")
	}
	return nil
}

func TestJobArgsValidateWhateverItsReceiverAndAreNeverAPointer(t *testing.T) {
	t.Parallel()
	app := runtime.RegisterJobArgs[byPointer](runtime.NewApp(), runtime.JobKind{})
	k, ok := app.Kind("by.pointer")
	require.True(t, ok)
	require.NoError(t, k.Validate(json.RawMessage(`{"n":1}`)))
	require.EqualError(t, k.Validate(json.RawMessage(`{"n":-1}`)), "n is negative", "a Validate of *T is called too")
	require.ErrorContains(t, k.Validate(json.RawMessage(`{"n":"x"}`)), "args of job kind by.pointer do not decode into runtime_test.byPointer")
	require.PanicsWithValue(t, "stile: job args *runtime_test.byPointer: register the value type, not a pointer (null args would be a nil *runtime_test.byPointer)",
		func() { runtime.RegisterJobArgs[*byPointer](runtime.NewApp(), runtime.JobKind{}) })
}

// badData has a field encoding/json refuses.
type badData struct{ C chan int }

func (badData) EventType() string { return "Bad" }

// A decision whose typed event cannot be encoded refuses the command, and
// writes nothing: a bug of the module, said in one line.
func TestADecidedEventThatDoesNotEncodeRefusesTheCommand(t *testing.T) {
	t.Parallel()
	app := runtime.NewApp()
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "thing",
		Decide: func(struct{}, runtime.Command) (runtime.Decision, error) { return runtime.EmitData(badData{}), nil }})
	h := stiletest.New(t, stiletest.Config{App: app})
	ten := h.Tenant("acme")
	ctx := context.Background()
	_, err := ten.Command(ctx, api.Command{ID: "c1", Aggregate: "thing", AggregateID: "t1", Type: "Make"})
	require.Equal(t, api.CodeCommandRejected, client.Code(err))
	require.ErrorContains(t, err, "thing Make decided an event or a job whose data it could not encode: event Bad: encode the runtime_test.badData data: json: unsupported type: chan int")
	page, err := ten.Stream(ctx, api.StreamOf("thing", "t1"), 1, 10)
	require.NoError(t, err)
	require.Empty(t, page.Events, "nothing was written")
}
