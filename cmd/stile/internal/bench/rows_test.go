package bench_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/defaultapp/app"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
	"github.com/stile-run/stile/internal/wasmbuild"
	"github.com/stile-run/stile/stiletest"
)

// TestRowsPerOperation pins what each operation writes and reads in a
// tenant's Durable Object, counted by workerd's storage cursors: a change
// that adds a row to the job cycle, an append, a settlement or a command
// fails here. When a change lowers a figure, lower it here and in
// docs/DESIGN.md's table ("What does a tenant cost on Cloudflare?").
//
// The job cycle changes no alarm: the alarm that records the tenant's
// usage (5 s after its first unrecorded request) comes before any lease
// runs out, so a claim and its report leave it where it is; its figures
// are exact but for a usage record landing in the part. An append and a command set the projections' catch-up alarm,
// which workerd may or may not have fired when the next request comes
// (and the settlements run while it does): those figures may be up to one
// row per request under their pin, never over it.
//
// A projection batch is exact: the measurement waits for the projection
// to catch up before it starts and after each append, so each batch is
// one alarm of its own, and the alarms are counted (one per batch, or the
// figure takes in another alarm's rows). Its rows are the catch-up's
// (reading the generations, the events twice — their sizes first, to cut
// the batch at its byte budget —, one row of the projection's table per
// event, the checkpoint once) and the alarm set again after it fired. It
// runs first, after the warm-up recorded the usage: its alarms record it
// at most once in 5 s (a row more then; 4 written per event when every
// alarm did). With n = 20 the batch of up to 100 is one of 20 events: 22
// rows written, 111 read.
func TestRowsPerOperation(t *testing.T) {
	t.Parallel()
	w := &stiletest.Workerd{Wasm: func(tb testing.TB) []byte { return stiletest.BuildWasm(tb, wasmbuild.DefaultPackage) }}
	url := w.Start(t)
	t.Cleanup(w.Close)
	counter := &bench.RowCounter{Base: &http.Transport{}}
	d := bench.HTTP{C: client.New(url, stiletest.DefaultToken, &http.Client{Transport: counter})}
	const n, history = 20, 150 // the long aggregate reads its snapshot at 100
	figures, err := bench.RowsPerOperation(context.Background(), d, counter, n, history)
	require.NoError(t, err)

	type pin struct {
		written, read float64
		exact         bool
	}
	pins := map[string]pin{
		// Reads rose by about two a job with migration 0019's six columns
		// of stile_jobs (debounce and throttle), and by about one with
		// the paused reactions' and bulk operations' reads (0020, 0021),
		// as workerd counts them; a read costs a thousandth of a write.
		"job cycle, one job per request":                         {5, 32, true},
		"job cycle, 10 jobs per request":                         {5, 24.5, true},
		"job cycle, 100 jobs per request":                        {5, 23.75, true},
		"event appended, one per request":                        {4, 2, false},
		"event appended, 10 per request":                         {3.1, 2.1, false},
		"reaction delivery claimed and settled, one per request": {6, 31, false},
		"reaction delivery claimed and settled, 10 per request":  {5.1, 14, false},
		"command on an aggregate of 0 to 19 events":              {7, 23.95, false},
		"command on an aggregate of 150 to 169 events":           {7, 125, false}, // 325 without the snapshot
		"projection batch of one event, per event":               {3, 16, true},
		"projection batch of 100 events, per event":              {1.1, 5.55, true},
	}
	// The projection's figures are its alarms', one per batch; the others'
	// count none.
	alarms := map[string]int{"projection batch of one event, per event": n, "projection batch of 100 events, per event": 1}
	for _, f := range figures { // all of them, before any fails
		t.Logf("%s: %.2f rows written, %.2f read per operation (%d requests, %d alarms)", f.Op, f.Written, f.Read, f.Requests, f.Alarms)
	}
	require.Len(t, figures, len(pins))
	for _, f := range figures {
		p, ok := pins[f.Op]
		require.True(t, ok, "no pin for %q", f.Op)
		require.Equal(t, alarms[f.Op], f.Alarms, "%s: alarms counted", f.Op)
		// The tenant records its usage at most every 5 s, in whichever
		// request comes then: once in a part, that is up to 3 rows more
		// (the day's row, and the alarm moved away and back).
		record := 3 / float64(f.Ops)
		if p.exact {
			require.GreaterOrEqual(t, f.Written, p.written-0.01, "%s: rows written per operation", f.Op)
			require.LessOrEqual(t, f.Written, p.written+record+0.01, "%s: rows written per operation", f.Op)
		} else {
			perRequest := float64(f.Requests) / float64(f.Ops)
			require.LessOrEqual(t, f.Written, p.written+record+0.01, "%s: rows written per operation", f.Op)
			require.GreaterOrEqual(t, f.Written, p.written-perRequest-0.01, "%s: rows written per operation", f.Op)
		}
		// Reads vary a little with what the alarm did in between; 5% either
		// way is a change, not noise.
		require.InEpsilon(t, p.read, f.Read, 0.05, "%s: rows read per operation", f.Op)
	}
}

// TestRowsAreNeverASilentZero: against a host that does not count rows
// (stile dev's server), the measurement fails and says why.
func TestRowsAreNeverASilentZero(t *testing.T) {
	t.Parallel()
	const token = "bench-token-0123456789abcdef"
	m := stiletest.New(t, stiletest.Config{App: app.App(), Token: token}).Manager()
	h, stop, err := bench.Serve(m, token)
	require.NoError(t, err)
	t.Cleanup(stop)
	counter := &bench.RowCounter{Base: &http.Transport{}}
	d := bench.HTTP{C: client.New(h.C.BaseURL(), token, &http.Client{Transport: counter})}
	_, err = bench.RowsPerOperation(context.Background(), d, counter, 2, 2)
	require.ErrorContains(t, err, "answered 201 without Stile-Rows-Read and Stile-Rows-Written (only a tenant's Durable Object counts them)")
}
