package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
)

// Scenarios of projections: batches exactly once, a failing event
// isolated and retried, writes outside the projection's tables refused,
// rebuilds swapped in atomically.

func (s *scenario) note(stream string, d testapp.NoteData) int64 {
	s.t.Helper()
	b, _ := json.Marshal(d)
	a, err := s.ten.Append(s.ctx, stream, api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: b}}})
	require.NoError(s.t, err)
	return a.FirstSeq
}

func (s *scenario) notesStatus() api.ProjectionStatus {
	s.t.Helper()
	st, err := s.ten.Projections(s.ctx)
	require.NoError(s.t, err)
	for _, p := range st.Projections {
		if p.Name == testapp.NotesProjection {
			return p
		}
	}
	require.Fail(s.t, "no notes projection")
	return api.ProjectionStatus{}
}

type noteRow struct {
	Seq        int64 `json:"seq"`
	N          int64 `json:"n"`
	Generation int64 `json:"generation"`
}

func (s *scenario) notesOf(stream string) []noteRow {
	s.t.Helper()
	res, err := s.ten.Query(s.ctx, "notes_of", url.Values{"stream": {stream}})
	require.NoError(s.t, err)
	out := make([]noteRow, len(res.Rows))
	for i, r := range res.Rows {
		require.NoError(s.t, json.Unmarshal(r, &out[i]))
	}
	return out
}

type totalRow struct {
	Stream string `json:"stream"`
	Count  int64  `json:"count"`
	Sum    int64  `json:"sum"`
}

func (s *scenario) totals() []totalRow {
	s.t.Helper()
	res, err := s.ten.Query(s.ctx, "note_totals", nil)
	require.NoError(s.t, err)
	out := make([]totalRow, len(res.Rows))
	for i, r := range res.Rows {
		require.NoError(s.t, json.Unmarshal(r, &out[i]))
	}
	return out
}

// caughtUp lets due alarms run until the notes projection reached the
// head of the log (or stalled, when stalled is true).
func (s *scenario) caughtUp(stalled bool) api.ProjectionStatus {
	s.t.Helper()
	var st api.ProjectionStatus
	cond := func() bool {
		st = s.notesStatus()
		if stalled {
			return st.Live.Status == "stalled"
		}
		return st.Rebuild == nil && st.Live.Status == "current"
	}
	if !s.tg.realTime() {
		step := 500 * time.Millisecond // past a failed alarm's retry
		if stalled {
			step = 0 // no time passes: a poisoned event stays poisoned
		}
		for i := 0; i < 50 && !cond(); i++ {
			s.tg.advance(s.t, step)
		}
	}
	eventually(s.t, s.tg, cond, fmt.Sprintf("the notes projection is %s", map[bool]string{true: "stalled", false: "current"}[stalled]))
	return st
}

// The seed's fifth event: a batch of 10 whose 5th event fails. The four
// before it are committed on their own, the projection stalls at the 5th
// with its error, and once the handler succeeds every event is applied
// exactly once: the rows are those of applying them one by one.
func scenarioProjectionFifthEvent(s *scenario) {
	t := s.t
	var seqs []int64
	var sum int64
	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	poisonUntil := status.Now.Add(2 * time.Second).UnixMilli() // the tenant's clock
	for i := range 10 {
		d := testapp.NoteData{N: int64(i + 1)}
		if i == 4 {
			d.PoisonUntil = poisonUntil
		}
		sum += d.N
		seqs = append(seqs, s.note("batch", d))
	}
	st := s.caughtUp(true)
	require.Equal(t, seqs[3], st.Live.Checkpoint, "the four events before the poison committed")
	require.Equal(t, seqs[4], st.Live.ErrorSeq)
	require.Contains(t, st.Live.Error, "poisoned until")
	require.NotNil(t, st.Live.RetryAt)
	require.Equal(t, int64(6), st.Live.Lag)
	require.Len(t, s.notesOf("batch"), 4)

	s.tg.advance(t, 2500*time.Millisecond) // the handler succeeds from now on
	st = s.caughtUp(false)
	require.Equal(t, seqs[9], st.Live.Checkpoint)
	require.Empty(t, st.Live.Error)
	rows := s.notesOf("batch")
	require.Len(t, rows, 10, "each event applied exactly once")
	for i, r := range rows {
		require.Equal(t, seqs[i], r.Seq)
		require.Equal(t, int64(i+1), r.N)
	}
	require.Equal(t, []totalRow{{Stream: "batch", Count: 10, Sum: sum}}, s.totals())
}

// A write outside the projection's tables fails and rolls its batch back;
// the projection stalls at it, and the table it aimed at is untouched.
func scenarioProjectionWriteOutside(s *scenario) {
	t := s.t
	job := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	first := s.note("a", testapp.NoteData{N: 1})
	sneaky := s.note("a", testapp.NoteData{N: 2, Sneaky: true})
	s.note("a", testapp.NoteData{N: 3})
	st := s.caughtUp(true)
	require.Equal(t, first, st.Live.Checkpoint)
	require.Equal(t, sneaky, st.Live.ErrorSeq)
	require.Contains(t, st.Live.Error, "is not one of this projection's tables")
	require.Equal(t, "available", s.job(job.ID).State, "stile_jobs is untouched")
	require.Len(t, s.notesOf("a"), 1)
	// A panic in the handler is a failure like any other.
	s2 := s.note("b", testapp.NoteData{N: 1, Panic: true})
	require.Greater(t, s2, sneaky)
	require.Equal(t, "stalled", s.notesStatus().Live.Status)
}

// A rebuild replays the log into a new generation while reads keep the
// old one, and swaps it in: the same rows, from the new generation.
func scenarioProjectionRebuild(s *scenario) {
	t := s.t
	for i := range 25 {
		s.note(fmt.Sprintf("s%d", i%3), testapp.NoteData{N: int64(i)})
	}
	s.caughtUp(false)
	before := map[string][]noteRow{}
	for _, stream := range []string{"s0", "s1", "s2"} {
		before[stream] = s.notesOf(stream)
		require.NotEmpty(t, before[stream])
		require.Equal(t, int64(1), before[stream][0].Generation)
	}
	totals := s.totals()

	resp, err := s.ten.Rebuild(s.ctx, testapp.NotesProjection)
	require.NoError(t, err)
	var rebuilding api.ProjectionStatus
	for _, p := range resp.Projections {
		if p.Name == testapp.NotesProjection {
			rebuilding = p
		}
	}
	if !s.tg.realTime() { // no alarm has run yet: reads serve generation 1
		require.NotNil(t, rebuilding.Rebuild)
		require.Equal(t, int64(2), rebuilding.Rebuild.Generation)
		require.Equal(t, int64(0), rebuilding.Rebuild.Checkpoint)
		require.Equal(t, before["s1"], s.notesOf("s1"), "reads during the rebuild see the old generation")
		// The instance is replaced (a trap; an eviction or a deploy alike):
		// the new one goes on with the rebuild.
		p := s.tg.inProcess()
		p.injectFault(t, s.ten.Name(), "SELECT", 1)
		_, err := s.ten.Status(s.ctx)
		requireCode(t, err, http.StatusInternalServerError, api.CodeInternal)
		require.Equal(t, int64(1), p.manager.Restarts(s.ten.Name()))
		st := s.notesStatus()
		require.NotNil(t, st.Rebuild, "the rebuild survives a new instance")
		require.Equal(t, int64(2), st.Rebuild.Generation)
	}
	st := s.caughtUp(false)
	require.Equal(t, int64(2), st.Live.Generation)
	for stream, rows := range before {
		after := s.notesOf(stream)
		require.Len(t, after, len(rows))
		for i := range rows {
			require.Equal(t, rows[i].Seq, after[i].Seq)
			require.Equal(t, rows[i].N, after[i].N)
			require.Equal(t, int64(2), after[i].Generation, "rows come from the new generation")
		}
	}
	require.Equal(t, totals, s.totals(), "rebuild equals the incremental build")

	_, err = s.ten.Rebuild(s.ctx, "nope")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
	_, err = s.ten.Query(s.ctx, "notes_of", nil)
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = s.ten.Query(s.ctx, "nope", nil)
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
}

// Traps injected at random statements of batches: each kills the module
// mid-batch and rolls its transaction back; afterwards the rows equal the
// fold of the log and the checkpoint is at the head.
func scenarioProjectionFaults(s *scenario) {
	t := s.t
	want := map[string]totalRow{}
	for round := range 4 {
		for i := range 12 {
			stream := fmt.Sprintf("f%d", (round+i)%4)
			n := int64(round*100 + i)
			s.note(stream, testapp.NoteData{N: n})
			w := want[stream]
			w.Stream, w.Count, w.Sum = stream, w.Count+1, w.Sum+n
			want[stream] = w
		}
		// The (round+2)-th write to the notes table traps.
		s.tg.injectFault(t, s.ten.Name(), "INSERT INTO p_notes_", round+2)
		s.caughtUp(false)
	}
	if p := s.tg.inProcess(); p != nil {
		require.Equal(t, 4, p.faults.fired(s.ten.Name()), "every round trapped once")
	}
	got := map[string]totalRow{}
	for _, r := range s.totals() {
		got[r.Stream] = r
	}
	require.Equal(t, want, got)
	head, err := s.ten.Events(s.ctx, 0, 1)
	require.NoError(t, err)
	require.Equal(t, head.Head, s.notesStatus().Live.Checkpoint)
}

// A query's answer says how far its projection had applied the log, in a
// field and in headers; with min_seq it answers only once every event of
// the projection's types up to that seq is applied, and says where a
// stalled projection stopped until then. The client's QueryAtLeast waits.
func scenarioQueriesSayWhenStale(s *scenario) {
	t := s.t
	first := s.note("q", testapp.NoteData{N: 1})
	res, err := s.ten.QueryAtLeast(s.ctx, "notes_of", url.Values{"stream": {"q"}}, first)
	require.NoError(t, err)
	require.Len(t, res.Rows, 1, "the query waited for its projection to apply seq %d", first)
	require.Equal(t, &api.QueryProjection{Name: testapp.NotesProjection, Checkpoint: first, Status: "current"}, res.Projection)

	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	poisoned := s.note("q", testapp.NoteData{N: 2, PoisonUntil: status.Now.Add(2 * time.Second).UnixMilli()})
	last := s.note("q", testapp.NoteData{N: 3})
	s.caughtUp(true)
	res, err = s.ten.Query(s.ctx, "notes_of", url.Values{"stream": {"q"}})
	require.NoError(t, err, "without min_seq a stalled projection's rows are served, and said to be stale")
	require.Len(t, res.Rows, 1)
	p := res.Projection
	require.Equal(t, "stalled", p.Status)
	require.Equal(t, first, p.Checkpoint)
	require.Equal(t, poisoned, p.PendingFrom)
	require.Equal(t, poisoned, p.ErrorSeq)
	require.Contains(t, p.Error, "poisoned until")
	require.NotNil(t, p.RetryAt)

	// The same in the headers of the answer.
	path := "/v1/t/" + s.ten.Name() + "/queries/notes_of?stream=q"
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.tg.client().BaseURL()+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, fmt.Sprint(first), resp.Header.Get(api.HeaderProjectionCheckpoint))
	require.Equal(t, "stalled", resp.Header.Get(api.HeaderProjectionStatus))

	// min_seq up to the checkpoint answers; past the stalled event it is
	// refused with where the projection stopped.
	_, err = s.ten.Query(s.ctx, "notes_of", url.Values{"stream": {"q"}, api.MinSeqParam: {fmt.Sprint(first)}})
	require.NoError(t, err)
	_, err = s.ten.Query(s.ctx, "notes_of", url.Values{"stream": {"q"}, api.MinSeqParam: {fmt.Sprint(last)}})
	requireCode(t, err, http.StatusConflict, api.CodeProjectionBehind)
	require.ErrorContains(t, err, fmt.Sprintf("projection notes is stalled at event %d, short of min_seq %d", poisoned, last))
	short, cancel := context.WithTimeout(s.ctx, 100*time.Millisecond)
	_, err = s.ten.QueryAtLeast(short, "notes_of", url.Values{"stream": {"q"}}, last)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, api.CodeProjectionBehind, client.Code(err), "the last refusal comes with the deadline")
	for _, bad := range []string{"-1", "x", "1.5"} {
		_, err := s.ten.Query(s.ctx, "notes_of", url.Values{"stream": {"q"}, api.MinSeqParam: {bad}})
		requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
		require.ErrorContains(t, err, "min_seq=")
	}

	s.tg.advance(t, 2500*time.Millisecond) // the handler succeeds from now on
	s.caughtUp(false)
	res, err = s.ten.QueryAtLeast(s.ctx, "notes_of", url.Values{"stream": {"q"}}, last)
	require.NoError(t, err)
	require.Len(t, res.Rows, 3)
	require.Equal(t, &api.QueryProjection{Name: testapp.NotesProjection, Checkpoint: last, Status: "current"}, res.Projection)
}
