package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// debounceWindow is the scenario's window: long enough that enqueues a
// real-time host answers in a row fall in one.
const debounceWindow = 1500 * time.Millisecond

func argsN(n int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"n":%d}`, n)) }

// claimDue claims the one job a debounce or throttle made, once its time
// came: advancing the controlled clock, or long-polling in real time.
func (s *scenario) claimDue(d time.Duration) api.ClaimedJob {
	s.t.Helper()
	if !s.tg.realTime() {
		s.tg.advance(s.t, d)
	}
	return s.claim("w", 10, 1)[0]
}

// scenarioDebounceAndThrottle: enqueues of a debounce key collapse into
// one job that starts once the key is quiet for its window (never past its
// max wait), keeping the last, the first or every args; a throttle key's
// window answers with its first job; both work in transactions and
// decisions; bad requests are refused and write nothing.
func scenarioDebounceAndThrottle(s *scenario) {
	t := s.t
	w := debounceWindow.Milliseconds()
	for _, r := range []api.EnqueueRequest{
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: 0}},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w, Keep: "most"}},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w, MaxWaitMs: w - 1}},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "bad key", WindowMs: w}},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w}, Throttle: &api.Throttle{Key: "t", WindowMs: w}},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w}, UniqueKey: "u"},
		{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w}, RunAt: timePtr(time.Now())},
		{Kind: "test.echo", Throttle: &api.Throttle{Key: "t", WindowMs: 0}},
	} {
		_, err := s.ten.Enqueue(s.ctx, r)
		requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	}
	_, err := s.ten.PutSchedule(s.ctx, "each-minute", api.ScheduleRequest{Cron: "* * * * *",
		Job: api.EnqueueRequest{Kind: "test.echo", Debounce: &api.Debounce{Key: "d", WindowMs: w}}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest) // each period is its own job
	list, err := s.ten.List(s.ctx, "", "", "", "", 100)
	require.NoError(t, err)
	require.Empty(t, list.Jobs, "refused enqueues wrote nothing")

	// keep last (the default): one job, the newest args, started once the
	// key is quiet.
	first := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(1), Debounce: &api.Debounce{Key: "d", WindowMs: w}})
	require.Equal(t, api.JobState("scheduled"), first.State)
	require.EqualValues(t, 1, first.Collapsed)
	again := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(2), Debounce: &api.Debounce{Key: "d", WindowMs: w}})
	require.Equal(t, first.ID, again.ID, "the second enqueue collapses into the first's job")
	require.True(t, again.Existing)
	require.EqualValues(t, 2, again.Collapsed)
	require.False(t, again.RunAt.Before(first.RunAt), "each enqueue starts a new window")
	shown := s.job(first.ID)
	require.Contains(t, shown.Waiting, `debounced by key "d"`)
	require.Contains(t, shown.Waiting, "2 enqueues collapsed")
	require.Equal(t, "last", shown.Keep)
	s.claim("w", 10, 0) // not before the window's end
	c := s.claimDue(debounceWindow)
	require.Equal(t, first.ID, c.ID)
	require.JSONEq(t, `{"n":2}`, string(c.Args))
	require.Empty(t, c.AllArgs)
	s.complete(c, "w")
	next := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(3), Debounce: &api.Debounce{Key: "d", WindowMs: w}})
	require.NotEqual(t, first.ID, next.ID, "a job that started collects no more: the next enqueue makes a new one")
	s.complete(s.claimDue(debounceWindow), "w")

	// keep first, and keep all: every args, in order, nothing dropped
	// (here in a transaction).
	f := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(1), Debounce: &api.Debounce{Key: "f", WindowMs: w, Keep: "first"}})
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(2), Debounce: &api.Debounce{Key: "f", WindowMs: w, Keep: "first"}})
	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", Debounce: &api.Debounce{Key: "f", WindowMs: w, Keep: "all"}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest) // the key collects with keep first
	var all []api.Job
	for i := 1; i <= 3; i++ {
		var j api.Job
		require.NoError(t, s.ten.Tx(s.ctx, "enqueue", api.EnqueueRequest{Kind: "test.echo", Args: argsN(i),
			Debounce: &api.Debounce{Key: "a", WindowMs: w, Keep: "all"}}, &j))
		all = append(all, j)
	}
	require.Equal(t, all[0].ID, all[2].ID)
	got := map[string]api.ClaimedJob{}
	if !s.tg.realTime() {
		s.tg.advance(t, debounceWindow)
	}
	for len(got) < 2 { // the two windows end a moment apart in real time
		r := api.ClaimRequest{Worker: "w", Limit: 10}
		if s.tg.realTime() {
			r.WaitMs = 15_000
		}
		resp, err := s.ten.Claim(s.ctx, r)
		require.NoError(t, err)
		require.NotEmpty(t, resp.Jobs, "both debounced jobs are due")
		for _, c := range resp.Jobs {
			got[c.ID] = c
		}
	}
	require.JSONEq(t, `{"n":1}`, string(got[f.ID].Args), "keep first")
	a := got[all[0].ID]
	require.JSONEq(t, `{"n":3}`, string(a.Args), "keep all: the args are the last")
	require.Len(t, a.AllArgs, 3)
	for i, raw := range a.AllArgs {
		require.JSONEq(t, string(argsN(i+1)), string(raw), "keep all: every args in order")
	}
	for _, c := range got {
		s.complete(c, "w")
	}

	// The max wait bounds how long a busy key postpones its job.
	m := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Debounce: &api.Debounce{Key: "m", WindowMs: w, MaxWaitMs: w + 200}})
	s.tg.advance(t, debounceWindow/2) // a sleep, in real time
	m2 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Debounce: &api.Debounce{Key: "m", WindowMs: w, MaxWaitMs: w + 200}})
	require.Equal(t, m.ID, m2.ID)
	require.Equal(t, m.CreatedAt.Add(debounceWindow+200*time.Millisecond), m2.RunAt, "never past the first enqueue's max wait")
	s.complete(s.claimDue(debounceWindow), "w")

	// In a decision: a command's jobs collapse too.
	for i := 1; i <= 2; i++ {
		s.command(api.Command{ID: fmt.Sprintf("nudge-%d", i), Aggregate: "payment", AggregateID: "p1", Type: "Nudge", Data: argsN(i)})
	}
	n := s.claimDue(time.Second)
	require.Len(t, n.AllArgs, 2, "both commands' jobs in one")
	s.complete(n, "w")

	// Throttle: the first runs, the rest of its window get it, whatever
	// its state; after the window, a new one.
	th := api.Throttle{Key: "t", WindowMs: 60_000}
	t1 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(1), Throttle: &th})
	require.Equal(t, api.JobState("available"), t1.State)
	t2 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: argsN(2), Throttle: &th})
	require.Equal(t, t1.ID, t2.ID)
	require.True(t, t2.Existing)
	s.complete(s.claim("w", 10, 1)[0], "w")
	var t3 api.Job
	require.NoError(t, s.ten.Tx(s.ctx, "enqueue", api.EnqueueRequest{Kind: "test.echo", Throttle: &th}, &t3))
	require.Equal(t, t1.ID, t3.ID, "the window holds after the job completed")
	require.Equal(t, api.JobState("completed"), t3.State)
	s.claim("w", 10, 0)
	if !s.tg.realTime() {
		s.tg.advance(t, time.Minute)
		t4 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Throttle: &th})
		require.NotEqual(t, t1.ID, t4.ID, "a new window, a new job")
	}
}
