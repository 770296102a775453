package host_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// A handler that is not deterministic: when an event before the failing
// one fails as it is applied again, that event is the one the projection
// stalls on, with its error, and the ones before it are applied once.
func TestProjectionStallsOnTheFirstEventThatFails(t *testing.T) {
	t.Parallel()
	calls := map[int64]int{}
	app := runtime.NewApp().RegisterProjection(runtime.Projection{Name: "tally", Events: []string{"T"}, Batch: 10,
		Backoff: time.Second, MaxBackoff: time.Second,
		Tables: []string{`CREATE TABLE {t} (stream TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT`},
		Handle: func(tx *runtime.ProjectionTx, e api.Event) error {
			calls[e.Seq]++
			switch {
			case e.Seq == 5:
				return errors.New("five always fails")
			case e.Seq == 3 && calls[3] == 2:
				return errors.New("three fails once, on its second try")
			}
			return tx.Exec(`INSERT INTO {t} (stream, n) VALUES (?, 1) ON CONFLICT (stream) DO UPDATE SET n = n + 1`, e.Stream)
		}}).
		RegisterQuery(runtime.Query{Name: "tally", Projection: "tally", SQL: `SELECT n FROM {t} WHERE stream = ?`,
			Params: []string{"stream"}, Columns: []string{"n"}})
	d := &deployment{t: t, dir: t.TempDir()}
	d.deploy(app)
	d.appendT(8)
	d.m.FireDue(t.Context()) // one batch of 8: fails at 5; 1-4 again: 3 fails
	st := d.status().Live
	require.Equal(t, "stalled", st.Status)
	require.Equal(t, int64(3), st.ErrorSeq)
	require.Contains(t, st.Error, "three fails once")
	require.Equal(t, int64(2), st.Checkpoint)
	require.Equal(t, int64(2), d.tally())

	d.h.Clock().Advance(time.Second) // 3 and 4 go now; 5 stalls
	d.m.FireDue(t.Context())
	st = d.status().Live
	require.Equal(t, int64(5), st.ErrorSeq)
	require.Equal(t, int64(4), st.Checkpoint)
	require.Equal(t, int64(4), d.tally(), "each event before the stall applied once")
}
