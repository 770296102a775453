package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

// tally is a state that survives JSON: the versions of the events folded.
type tally struct {
	Seen []int64
}

// tallyApp registers aggregate "tally", whose Decide refuses unless its
// state is the fold of every event of the stream in order, and which
// scribbles on the state it is given (nothing Decide does may reach a
// snapshot). It keeps JSON snapshots every events (negative: none) under
// version. evolved counts the events Evolve folds.
func tallyApp(version string, every int, evolved *atomic.Int64) *runtime.App {
	var snaps *runtime.Snapshots[tally]
	if every >= 0 {
		snaps = runtime.JSONSnapshots[tally](version)
		snaps.Every = every
	}
	app := runtime.NewApp()
	return runtime.RegisterAggregate(app, runtime.Aggregate[tally]{Name: "tally", Snapshots: snaps,
		Evolve: func(s tally, e api.Event) tally {
			evolved.Add(1)
			s.Seen = append(s.Seen, e.Version)
			return s
		},
		Decide: func(s tally, c runtime.Command) (runtime.Decision, error) {
			for i, v := range s.Seen {
				if v != int64(i+1) {
					return runtime.Decision{}, fmt.Errorf("the state is not the stream's fold: event %d is version %d", i+1, v)
				}
			}
			if len(s.Seen) > 0 {
				s.Seen[0] = -1 // a Decide that writes on its state
			}
			return runtime.Emit(api.NewEvent{Type: "Counted"}), nil
		}})
}

func count(t *testing.T, ten interface {
	Command(context.Context, api.Command) (api.CommandResult, error)
}, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		res, err := ten.Command(context.Background(), api.Command{ID: fmt.Sprintf("c%d", i), Aggregate: "tally", AggregateID: "t1", Type: "Count"})
		require.NoError(t, err)
		require.Equal(t, int64(i), res.Version)
	}
}

// A command folds its aggregate from the snapshot kept every SnapshotEvery
// events and the events after it; a new SnapshotVersion makes the next
// command fold the whole stream and keep a new snapshot.
func TestCommandsFoldFromTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	var evolved atomic.Int64
	h := stiletest.New(t, stiletest.Config{App: tallyApp("v1", 10, &evolved), DataDir: dir})
	ten := h.Tenant("acme")
	count(t, ten, 1, 25) // snapshots at versions 10 and 20
	evolved.Store(0)
	count(t, ten, 26, 1)
	require.Equal(t, int64(5), evolved.Load(), "the 26th command folds events 21 to 25 onto the snapshot at 20")
	require.NoError(t, h.Close())

	// Evolve changed: the snapshots of v1 are not this fold's.
	var evolved2 atomic.Int64
	h = stiletest.New(t, stiletest.Config{App: tallyApp("v2", 10, &evolved2), DataDir: dir})
	ten = h.Tenant("acme")
	count(t, ten, 27, 1)
	require.Equal(t, int64(26), evolved2.Load(), "a snapshot of another version is ignored: the whole stream is folded")
	evolved2.Store(0)
	count(t, ten, 28, 1)
	require.Equal(t, int64(1), evolved2.Load(), "the command before kept a snapshot at version 26")

	// Without snapshots, every command folds everything.
	require.NoError(t, h.Close())
	var evolved3 atomic.Int64
	h = stiletest.New(t, stiletest.Config{App: tallyApp("v2", -1, &evolved3), DataDir: dir})
	count(t, h.Tenant("acme"), 29, 1)
	require.Equal(t, int64(28), evolved3.Load())
}

// secret is a state JSON cannot carry: its field is unexported.
type secret struct{ n int }

// A state that does not come back from JSON as it was is never kept: every
// command folds the whole stream, and the log says why.
func TestAStateJSONLosesIsNeverSnapshotted(t *testing.T) {
	var evolved atomic.Int64
	app := runtime.NewApp()
	snaps := runtime.JSONSnapshots[secret]("v1")
	snaps.Every = 2
	runtime.RegisterAggregate(app, runtime.Aggregate[secret]{Name: "tally", Snapshots: snaps,
		Evolve: func(s secret, e api.Event) secret { evolved.Add(1); s.n++; return s },
		Decide: func(s secret, c runtime.Command) (runtime.Decision, error) {
			if int64(s.n) != evolved.Load() {
				return runtime.Decision{}, errors.New("the state lost events")
			}
			return runtime.Emit(api.NewEvent{Type: "Counted"}), nil
		}})
	logs := &syncBuffer{}
	h := stiletest.New(t, stiletest.Config{App: app, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ten := h.Tenant("acme")
	for i := 1; i <= 6; i++ {
		evolved.Store(0)
		count(t, ten, i, 1)
		require.Equal(t, int64(i-1), evolved.Load(), "command %d folds every event before it", i)
	}
	require.Contains(t, logs.String(), "keeps no snapshot of tally:t1: its state does not come back from Encode and Decode as it was")
}

// A stream longer than the 100,000 events a command used to fold at most
// takes commands: the fold reads it in pages.
func TestALongStreamTakesCommands(t *testing.T) {
	var evolved atomic.Int64
	h := stiletest.New(t, stiletest.Config{App: tallyApp("v1", 0, &evolved)}) // every DefaultSnapshotEvery
	ten := h.Tenant("acme")
	ctx := context.Background()
	const history = 100_001
	evs := make([]api.NewEvent, api.MaxAppendEvents)
	for i := range evs {
		evs[i] = api.NewEvent{Type: "Counted"}
	}
	for done := 0; done < history; done += len(evs) {
		_, err := ten.Append(ctx, "tally:t1", api.AppendRequest{Events: evs[:min(len(evs), history-done)]})
		require.NoError(t, err)
	}
	count(t, ten, history+1, 2)
	require.Equal(t, int64(history+1), evolved.Load(), "the first command folded the stream, the second its snapshot and the one event after it")
}

// shape is an interface state: nil is a state like any other.
type shape interface{ sides() int }

type square struct{}

func (square) sides() int { return 4 }

// A panic in a snapshot codec keeps no snapshot and fails no command, and
// an interface state starts nil and stays what Evolve made it, across
// snapshots.
func TestSnapshotCodecsAndInterfaceStates(t *testing.T) {
	app := runtime.NewApp()
	runtime.RegisterAggregate(app, runtime.Aggregate[shape]{Name: "tally",
		Snapshots: &runtime.Snapshots[shape]{Every: 1, Version: "v1",
			Encode: func(s shape) ([]byte, error) {
				if s == nil {
					return []byte("nil"), nil
				}
				panic("no codec for a square")
			},
			Decode: func(b []byte) (shape, error) { return nil, nil }},
		Evolve: func(s shape, e api.Event) shape { return square{} },
		Decide: func(s shape, c runtime.Command) (runtime.Decision, error) {
			if (s == nil) != (c.ID == "c1") { // the first command sees no events
				return runtime.Decision{}, fmt.Errorf("command %s saw %v", c.ID, s)
			}
			return runtime.Emit(api.NewEvent{Type: "Counted"}), nil
		}})
	logs := &syncBuffer{}
	h := stiletest.New(t, stiletest.Config{App: app, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	count(t, h.Tenant("acme"), 1, 3)
	require.Contains(t, logs.String(), "keeps no snapshot of tally:t1")
}
