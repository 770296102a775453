package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	stiletoken "github.com/stile-run/stile/token"
	"github.com/stile-run/stile/worker"
)

// Scenarios of the complete job semantics (dependencies, concurrency
// limits, cancel, snooze, retries, tags, unique keys, timeouts, listing).

func (s *scenario) report(c api.ClaimedJob, worker string, r api.ReportRequest) api.ReportResponse {
	s.t.Helper()
	r.Claim = claimOf(c, worker)
	resp, err := s.ten.Report(s.ctx, c.ID, r)
	require.NoError(s.t, err)
	return resp
}

func (s *scenario) complete(c api.ClaimedJob, worker string) {
	s.t.Helper()
	s.report(c, worker, api.ReportRequest{Outcome: api.OutcomeCompleted})
}

// claimID claims the one job id; fails if another (or none) comes.
func (s *scenario) claimID(worker, id string) api.ClaimedJob {
	s.t.Helper()
	c := s.claim(worker, 1, 1)[0]
	require.Equal(s.t, id, c.ID)
	return c
}

func scenarioDependencies(s *scenario) {
	t := s.t
	js, err := s.ten.EnqueueBatch(s.ctx, []api.EnqueueRequest{
		{Kind: "test.echo"}, // #0 a
		{Kind: "test.echo"}, // #1 b
		{Kind: "test.echo", DependsOn: []string{"#0", "#1"}},                // #2 c waits for a and b
		{Kind: "test.echo", DependsOn: []string{"#2"}},                      // #3 d waits for c
		{Kind: "test.fast", MaxAttempts: 1},                                 // #4 e will die
		{Kind: "test.echo", DependsOn: []string{"#4"}},                      // #5 f dies with it
		{Kind: "test.echo", DependsOn: []string{"#4"}, RunRegardless: true}, // #6 g runs anyway
		{Kind: "test.echo", DependsOn: []string{"#5"}},                      // #7 h: cancelled with f
	})
	require.NoError(t, err)
	require.Equal(t, "pending", js[2].State)
	require.Equal(t, int64(2), js[2].PendingParents)
	for _, i := range []int{3, 5, 6, 7} {
		require.Equal(t, "pending", js[i].State)
	}

	cs := s.claim("w", 10, 3) // a, b, e: only the jobs without parents
	byID := map[string]api.ClaimedJob{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	require.Contains(t, byID, js[0].ID)
	require.Contains(t, byID, js[1].ID)
	require.Contains(t, byID, js[4].ID)

	s.complete(byID[js[0].ID], "w")
	c := s.job(js[2].ID)
	require.Equal(t, "pending", c.State, "one parent is not enough")
	require.Equal(t, int64(1), c.PendingParents)
	s.complete(byID[js[1].ID], "w")
	c = s.job(js[2].ID)
	require.Equal(t, "available", c.State, "the last parent's success unlatches the child")
	require.Len(t, c.DependsOn, 2)
	for _, d := range c.DependsOn {
		require.Equal(t, "completed", d.Resolved)
	}

	s.report(byID[js[4].ID], "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "boom"})
	require.Equal(t, "dead", s.job(js[4].ID).State)
	f := s.job(js[5].ID)
	require.Equal(t, "cancelled", f.State)
	require.Contains(t, f.LastError, "parent job "+js[4].ID+" ended dead", "the reason names the parent")
	require.Equal(t, "cancelled", s.job(js[7].ID).State, "the cancellation cascades")
	require.Equal(t, "available", s.job(js[6].ID).State, "a run_regardless child runs anyway")

	cc := s.claim("w", 10, 2) // c and g
	for _, x := range cc {
		s.complete(x, "w")
	}
	require.Equal(t, "available", s.job(js[3].ID).State)

	// A parent that already completed counts as done; one that does not
	// exist is refused and nothing is written.
	late, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{js[0].ID}})
	require.NoError(t, err)
	require.Equal(t, "available", late.State)
	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{"424242"}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = s.ten.EnqueueBatch(s.ctx, []api.EnqueueRequest{{Kind: "test.echo"}, {Kind: "test.echo", DependsOn: []string{"424242"}}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	next := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	lateID, _ := strconv.Atoi(late.ID)
	require.Equal(t, strconv.Itoa(lateID+1), next.ID, "the refused batch wrote nothing")
}

// scenarioStaleReportUnlatchesNothing: a parent's stale success does not
// release its child; only the fenced one does.
func scenarioStaleReportUnlatchesNothing(s *scenario) {
	t := s.t
	js, err := s.ten.EnqueueBatch(s.ctx, []api.EnqueueRequest{{Kind: "test.fast"}, {Kind: "test.echo", DependsOn: []string{"#0"}}})
	require.NoError(t, err)
	a := s.claimID("worker-a", js[0].ID)
	s.tg.advance(t, lease+100*time.Millisecond)
	s.tg.advance(t, maxBackoff)
	b := s.claimID("worker-b", js[0].ID)
	_, err = s.ten.Report(s.ctx, js[0].ID, completed(claimOf(a, "worker-a"), `1`))
	requireCode(t, err, http.StatusConflict, api.CodeStaleAttempt)
	require.Equal(t, "pending", s.job(js[1].ID).State, "a stale report unlatches nothing")
	s.complete(b, "worker-b")
	require.Equal(t, "available", s.job(js[1].ID).State)
}

func scenarioConcurrencyLimits(s *scenario) {
	t := s.t
	_, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", ConcurrencyKey: "nolimit"})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)

	l, err := s.ten.SetLimit(s.ctx, "api", 2)
	require.NoError(t, err)
	require.Equal(t, api.Limit{Key: "api", Slots: 2}, l)
	var ids []string
	for range 5 {
		ids = append(ids, s.enqueue(api.EnqueueRequest{Kind: "test.fast", ConcurrencyKey: "api"}).ID)
	}
	free := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	cs := s.claim("w", 10, 3)
	keyed := 0
	for _, c := range cs {
		if c.ID != free.ID {
			keyed++
		}
	}
	require.Equal(t, 2, keyed, "never more than the limit in flight")
	limits, err := s.ten.Limits(s.ctx)
	require.NoError(t, err)
	require.Equal(t, []api.Limit{{Key: "api", Slots: 2, InUse: 2}}, limits)
	s.claim("w", 10, 0) // the key is full

	// A fenced completion releases a slot; so does lease expiry.
	for _, c := range cs {
		if c.ID != free.ID {
			s.complete(c, "w")
			break
		}
	}
	one := s.claim("w", 10, 1)[0]
	require.Contains(t, ids, one.ID)
	s.tg.advance(t, lease+100*time.Millisecond) // both keyed leases lapse
	s.tg.advance(t, maxBackoff)
	limits, err = s.ten.Limits(s.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), limits[0].InUse, "expiry released the slots, once each")
	rest := s.claim("w", 10, 2)
	for _, c := range rest {
		s.complete(c, "w")
	}
	for {
		resp, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "w", Limit: 10})
		require.NoError(t, err)
		if len(resp.Jobs) == 0 {
			break
		}
		for _, c := range resp.Jobs {
			s.complete(c, "w")
		}
	}
	limits, err = s.ten.Limits(s.ctx)
	require.NoError(t, err)
	require.Equal(t, int64(0), limits[0].InUse, "no slot leaked")

	// The module's default limit for its kind: one at a time.
	x := s.enqueue(api.EnqueueRequest{Kind: "test.limited"})
	s.enqueue(api.EnqueueRequest{Kind: "test.limited"})
	require.Equal(t, "limited", x.ConcurrencyKey)
	got := s.claim("w", 10, 1)
	require.Equal(t, x.ID, got[0].ID)
	s.claim("w", 10, 0)
	_, err = s.ten.SetLimit(s.ctx, "limited", 2) // a tenant raises the module's default
	require.NoError(t, err)
	s.claim("w", 10, 1)
}

// requireWholeJob checks that an operator action answered the whole job,
// as GET /jobs/{id} shows it (without the history only GET has).
func requireWholeJob(t *testing.T, full, got api.Job) {
	t.Helper()
	full.Attempts, full.Rejections, full.DependsOn, full.Args = nil, nil, nil, nil
	got.Args = nil
	require.NotEmpty(t, got.Kind, "the answer is the whole job")
	require.False(t, got.CreatedAt.IsZero(), "the answer is the whole job")
	require.Equal(t, full, got)
}

func scenarioCancel(s *scenario) {
	t := s.t
	// A waiting job ends at once; its dependents follow.
	q := s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: timePtr(time.Now().Add(time.Hour))})
	child, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{q.ID}})
	require.NoError(t, err)
	j, err := s.ten.Cancel(s.ctx, q.ID, "no longer needed")
	require.NoError(t, err)
	require.Equal(t, "cancelled", j.State)
	require.Equal(t, "cancelled: no longer needed", j.LastError)
	requireWholeJob(t, s.job(q.ID), j)
	require.Equal(t, "cancelled", s.job(child.ID).State)
	_, err = s.ten.Cancel(s.ctx, q.ID, "")
	requireCode(t, err, http.StatusConflict, api.CodeFinished)

	// A running job: the worker learns at its heartbeat, which stops
	// extending the lease, and reports cancelled.
	r := s.enqueue(api.EnqueueRequest{Kind: "test.fast", LeaseMs: 2000})
	c := s.claimID("w", r.ID)
	j, err = s.ten.Cancel(s.ctx, r.ID, "")
	require.NoError(t, err)
	require.Equal(t, "running", j.State)
	require.NotNil(t, j.CancelRequestedAt)
	requireWholeJob(t, s.job(r.ID), j)
	s.tg.advance(t, 500*time.Millisecond)
	hb, err := s.ten.Heartbeat(s.ctx, r.ID, claimOf(c, "w"))
	require.NoError(t, err)
	require.True(t, hb.CancelRequested, "the heartbeat carries the cancel")
	require.Equal(t, c.LeaseUntil, hb.LeaseUntil, "and no longer extends the lease")
	resp := s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeCancelled, Error: "stopped"})
	require.Equal(t, "cancelled", resp.State)
	require.Equal(t, "cancelled", s.job(r.ID).Attempts[0].Outcome)

	// A worker that ignores it runs into the lease: cancelled, not retried,
	// and its late report is fenced out.
	g := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	gc := s.claimID("deaf", g.ID)
	_, err = s.ten.Cancel(s.ctx, g.ID, "")
	require.NoError(t, err)
	s.tg.advance(t, lease+100*time.Millisecond)
	eventually(t, s.tg, func() bool { return s.job(g.ID).State == "cancelled" }, "the lapsed lease ends it cancelled")
	_, err = s.ten.Report(s.ctx, g.ID, completed(claimOf(gc, "deaf"), `"late"`))
	requireCode(t, err, http.StatusConflict, api.CodeLeaseExpired)
	require.Equal(t, int64(0), s.job(g.ID).Failures, "a cancel is not a failure")
	s.tg.advance(t, maxBackoff)
	s.claim("deaf", 1, 0)

	// A report that arrives while the lease is live is accepted as it is.
	h := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	hc := s.claimID("quick", h.ID)
	_, err = s.ten.Cancel(s.ctx, h.ID, "")
	require.NoError(t, err)
	require.Equal(t, "completed", s.report(hc, "quick", api.ReportRequest{Outcome: api.OutcomeCompleted}).State)
}

func scenarioSnoozeFinalRetryDelete(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 3})
	c := s.claimID("w", j.ID)
	resp := s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeSnoozed, SnoozeMs: 1500})
	require.Equal(t, "scheduled", resp.State)
	require.Equal(t, int64(0), resp.Failures, "a snooze spends no retry budget")
	s.claim("w", 1, 0)
	s.tg.advance(t, 1600*time.Millisecond)
	c = s.claimID("w", j.ID)
	require.Equal(t, int64(2), c.Attempt, "the next claim still takes a new attempt number")

	resp = s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "permanent", Final: true})
	require.Equal(t, "dead", resp.State, "a final failure ends the job whatever its budget")
	got := s.job(j.ID)
	require.Equal(t, "snoozed", got.Attempts[0].Outcome)
	require.Equal(t, "failed", got.Attempts[1].Outcome)
	require.Equal(t, "permanent", got.Attempts[1].Error)

	err := s.ten.Delete(s.ctx, s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "elsewhere"}).ID)
	requireCode(t, err, http.StatusConflict, api.CodeNotFinished)

	back, err := s.ten.Retry(s.ctx, j.ID)
	require.NoError(t, err)
	require.Equal(t, "available", back.State)
	require.Equal(t, int64(0), back.Failures, "a fresh budget")
	c = s.claimID("w", j.ID)
	require.Equal(t, int64(3), c.Attempt, "attempt numbers go on")
	s.complete(c, "w")
	_, err = s.ten.Retry(s.ctx, j.ID)
	requireCode(t, err, http.StatusConflict, api.CodeNotRetryable)

	require.NoError(t, s.ten.Delete(s.ctx, j.ID))
	_, err = s.ten.Job(s.ctx, j.ID)
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
}

func scenarioTagsFollowTheFence(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", Tags: []string{"signup"}})
	require.Equal(t, []string{"signup"}, j.Tags)
	a := s.claimID("a", j.ID)
	s.tg.advance(t, lease+100*time.Millisecond)
	s.tg.advance(t, maxBackoff)
	b := s.claimID("b", j.ID)
	require.Equal(t, []string{"signup"}, b.Tags)
	_, err := s.ten.Report(s.ctx, j.ID, api.ReportRequest{Claim: claimOf(a, "a"), Outcome: api.OutcomeCompleted,
		Output: json.RawMessage(`"from a"`), Tags: []string{"stale"}})
	requireCode(t, err, http.StatusConflict, api.CodeStaleAttempt)
	s.report(b, "b", api.ReportRequest{Outcome: api.OutcomeCompleted, Output: json.RawMessage(`"from b"`), Tags: []string{"sent", "signup"}})
	got := s.job(j.ID)
	require.Equal(t, []string{"signup", "sent"}, got.Tags, "tags of the fenced outcome only, no repeats")
	require.JSONEq(t, `"from b"`, string(got.Output))
}

func scenarioUniqueEnqueue(s *scenario) {
	t := s.t
	first := s.enqueue(api.EnqueueRequest{Kind: "test.echo", UniqueKey: "invoice-7"})
	require.False(t, first.Existing)
	again, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", UniqueKey: "invoice-7", Args: json.RawMessage(`{"other":1}`)})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, first.ID, again.ID, "the live job is returned, not a second one")
	s.complete(s.claimID("w", first.ID), "w")
	// Once it finished, the key is free again, unless a window says not yet.
	within, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", UniqueKey: "invoice-7", UniqueWindowMs: 60_000})
	require.NoError(t, err)
	require.True(t, within.Existing)
	require.Equal(t, first.ID, within.ID)
	fresh := s.enqueue(api.EnqueueRequest{Kind: "test.echo", UniqueKey: "invoice-7"})
	require.False(t, fresh.Existing)
	require.NotEqual(t, first.ID, fresh.ID)
}

func scenarioTimeout(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", LeaseMs: 1000, TimeoutMs: 1500, MaxAttempts: 1})
	require.Equal(t, int64(1500), j.TimeoutMs)
	c := s.claimID("slow", j.ID)
	require.Equal(t, int64(1500), c.TimeoutMs)
	s.tg.advance(t, 800*time.Millisecond)
	hb, err := s.ten.Heartbeat(s.ctx, j.ID, claimOf(c, "slow"))
	require.NoError(t, err)
	require.False(t, hb.LeaseUntil.After(c.LeaseUntil.Add(500*time.Millisecond)), "no lease past claim + timeout")
	s.tg.advance(t, 800*time.Millisecond)
	eventually(t, s.tg, func() bool { return s.job(j.ID).State == "dead" }, "the time limit ends the attempt")
	require.Contains(t, s.job(j.ID).LastError, "timed out")
}

func scenarioListAndCounts(s *scenario) {
	t := s.t
	var ids []string
	for i := range 5 {
		ids = append(ids, s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: []string{"a", "b"}[i%2]}).ID)
	}
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: timePtr(time.Now().Add(time.Hour))})
	page, err := s.ten.List(s.ctx, "available", "", "", "", 2)
	require.NoError(t, err)
	require.Len(t, page.Jobs, 2)
	require.Equal(t, ids[1], page.Next)
	page2, err := s.ten.List(s.ctx, "available", "", "", page.Next, 2)
	require.NoError(t, err)
	require.Equal(t, ids[2], page2.Jobs[0].ID)
	inA, err := s.ten.List(s.ctx, "", "a", "test.echo", "", 100)
	require.NoError(t, err)
	require.Len(t, inA.Jobs, 3)
	require.Empty(t, inA.Next)

	qs, err := s.ten.Queues(s.ctx)
	require.NoError(t, err)
	counts := map[string]map[string]int64{}
	for _, q := range qs.Queues {
		counts[q.Queue] = q.Counts
	}
	require.Equal(t, int64(3), counts["a"]["available"])
	require.Equal(t, int64(2), counts["b"]["available"])
	require.Equal(t, int64(1), counts["default"]["scheduled"])

	// Every state is listed and counted, whichever index serves it: run one
	// job in queue a, finish one in b, cancel one, and add a keyed job and a
	// pending one.
	c := s.claim("w", 1, 1, "a")[0]
	done := s.claim("w", 1, 1, "b")[0]
	s.complete(done, "w")
	_, err = s.ten.Cancel(s.ctx, ids[4], "not needed")
	require.NoError(t, err)
	keyed := s.enqueue(api.EnqueueRequest{Kind: "test.limited", Queue: "a"})
	waiting, err := s.ten.EnqueueBatch(s.ctx, []api.EnqueueRequest{{Kind: "test.echo", Queue: "b"},
		{Kind: "test.echo", Queue: "b", DependsOn: []string{"#0"}}})
	require.NoError(t, err)
	listed := func(state string) []string {
		l, err := s.ten.List(s.ctx, state, "", "", "", 100)
		require.NoError(t, err)
		var got []string
		for _, j := range l.Jobs {
			require.Equal(t, state, string(j.State))
			got = append(got, j.ID)
		}
		return got
	}
	require.Equal(t, []string{c.ID}, listed("running"))
	require.Equal(t, []string{done.ID}, listed("completed"))
	require.Equal(t, []string{ids[4]}, listed("cancelled"))
	require.Equal(t, []string{waiting[1].ID}, listed("pending"))
	require.Contains(t, listed("available"), keyed.ID)
	running, err := s.ten.List(s.ctx, "running", "b", "", "", 100)
	require.NoError(t, err)
	require.Empty(t, running.Jobs, "the running job is in queue a")

	qs, err = s.ten.Queues(s.ctx)
	require.NoError(t, err)
	counts = map[string]map[string]int64{}
	for _, q := range qs.Queues {
		counts[q.Queue] = q.Counts
	}
	// a: 0 running, 2 and the keyed job available, 4 cancelled; b: 1 done, 3
	// and the batch's first available, its second pending.
	require.Equal(t, map[string]int64{"running": 1, "available": 2}, counts["a"])
	require.Equal(t, map[string]int64{"available": 2, "pending": 1}, counts["b"])
	require.Equal(t, map[string]int64{"completed": 1, "cancelled": 1}, qs.Finished)

	status, _, err := s.tg.client().Raw(s.ctx, "GET", "/v1/t/"+s.ten.Name()+"/jobs?state=sleeping", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status)
	status, _, err = s.tg.client().Raw(s.ctx, "GET", "/v1/t/"+s.ten.Name()+"/jobs?state=running&state=dead", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, "a repeated parameter is refused")
}

func timePtr(t time.Time) *time.Time { return &t }

func scenarioSchedules(s *scenario) {
	t := s.t
	put := func(cron string, job api.EnqueueRequest) (api.Schedule, error) {
		return s.ten.PutSchedule(s.ctx, "tick", api.ScheduleRequest{Cron: cron, Job: job})
	}
	_, err := put("61 * * * * *", api.EnqueueRequest{Kind: "test.echo"})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	_, err = put("@every 2s", api.EnqueueRequest{Kind: "nope"})
	requireCode(t, err, http.StatusBadRequest, api.CodeUnknownKind)
	_, err = put("@every 2s", api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{"1"}})
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)

	sc, err := put("@every 2s", api.EnqueueRequest{Kind: "test.other", Args: json.RawMessage(`{"every":2}`)})
	require.NoError(t, err)
	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	// Periods of @every are whole multiples of 2 s since the epoch, so the first
	// can be due a few ms after the PUT; under a real alarm it may have fired
	// (and moved the alarm on) before the status is read.
	if status.Now.Before(sc.NextAt) {
		require.False(t, status.AlarmAt.After(sc.NextAt), "the alarm covers the schedule's first period")
	}

	ticked := func() []api.Job {
		l, err := s.ten.List(s.ctx, "", "other", "test.other", "", 100)
		require.NoError(t, err)
		return l.Jobs
	}
	if s.tg.realTime() {
		// The real alarm enqueues the first period with nobody calling.
		time.Sleep(time.Until(sc.NextAt) + 2500*time.Millisecond)
		jobs := ticked()
		require.NotEmpty(t, jobs, "a cron tick enqueued a job")
		keys := map[string]bool{}
		for _, j := range jobs {
			require.Contains(t, j.Tags, "schedule:tick")
			require.NotContains(t, keys, j.UniqueKey, "one job per period")
			keys[j.UniqueKey] = true
		}
		require.NoError(t, s.ten.DeleteSchedule(s.ctx, "tick"))
		return
	}
	p := s.tg.inProcess()
	p.advance(t, time.Duration(sc.NextAt.UnixMilli()-p.clock.Now())*time.Millisecond)
	jobs := ticked()
	require.Len(t, jobs, 1, "the first period enqueued one job")
	require.Equal(t, "schedule:tick:"+strconv.FormatInt(sc.NextAt.UnixMilli(), 10), jobs[0].UniqueKey)
	require.JSONEq(t, `{"every":2}`, string(jobs[0].Args))

	// The alarm delivered twice for the same period enqueues nothing twice.
	for range 2 {
		_, err := p.manager.Do(s.ctx, s.ten.Name(), doAlarm())
		require.NoError(t, err)
	}
	require.Len(t, ticked(), 1)

	for i := 2; i <= 4; i++ { // each period once
		p.advance(t, 2*time.Second)
		require.Len(t, ticked(), i)
	}
	p.advance(t, 60*time.Second) // thirty periods missed while idle run once
	require.Len(t, ticked(), 5)
	got, err := s.ten.Schedule(s.ctx, "tick")
	require.NoError(t, err)
	require.True(t, got.NextAt.After(time.UnixMilli(p.clock.Now())), "the schedule resumes after now")
	require.Equal(t, ticked()[4].ID, got.LastJobID)

	require.NoError(t, s.ten.DeleteSchedule(s.ctx, "tick"))
	p.advance(t, 10*time.Second)
	require.Len(t, ticked(), 5, "a deleted schedule enqueues nothing more")
	err = s.ten.DeleteSchedule(s.ctx, "tick")
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
}

func doAlarm() do.Request { return do.Request{Kind: do.KindAlarm} }

// scenarioTransactionalEnqueue: a registered transaction writes the module's
// own table and enqueues a job in one storage transaction; when the write
// fails, the job is not enqueued either.
func scenarioTransactionalEnqueue(s *scenario) {
	t := s.t
	var out struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, s.ten.Tx(s.ctx, "signup", map[string]string{"email": "ada@example.com", "name": "Ada"}, &out))
	welcome := s.job(out.JobID)
	require.Equal(t, "available", welcome.State)
	require.Equal(t, []string{"welcome"}, welcome.Tags)

	err := s.ten.Tx(s.ctx, "signup", map[string]string{"email": "ada@example.com", "name": "Ada again"}, nil)
	requireCode(t, err, http.StatusUnprocessableEntity, api.CodeTxFailed)
	require.Contains(t, err.Error(), "UNIQUE constraint failed: accounts.email")
	err = s.ten.Tx(s.ctx, "signup", map[string]string{"name": "nobody"}, nil)
	requireCode(t, err, http.StatusBadRequest, "invalid_signup")
	err = s.ten.Tx(s.ctx, "sneaky", nil, nil)
	requireCode(t, err, http.StatusUnprocessableEntity, api.CodeTxFailed)
	require.Contains(t, err.Error(), "stile_")
	err = s.ten.Tx(s.ctx, "nope", nil, nil)
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)

	// The failed signup enqueued nothing: the next job gets the next id.
	next := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	id, _ := strconv.Atoi(out.JobID)
	require.Equal(t, strconv.Itoa(id+1), next.ID, "the failed business write enqueued nothing")
	require.Equal(t, "available", s.job(out.JobID).State, "and the first signup's job is intact")
}

// scenarioTypedArgs: a kind registered with typed args (receipt.Receipt)
// takes jobs enqueued typed from the client, a transaction and a decision,
// and untyped with the same JSON; args that do not decode or fail the
// type's Validate are refused at enqueue and write nothing. Handlers take
// each other's jobs: an untyped handler reads a typed enqueue's JSON, a
// typed handler decodes an untyped enqueue's, and fails for good a job
// whose args it cannot decode (a kind the module registers untyped).
func scenarioTypedArgs(s *scenario) {
	t := s.t
	typed, err := s.ten.EnqueueArgs(s.ctx, receipt.Receipt{Order: "o-1", Cents: 250}, api.EnqueueRequest{Tags: []string{"typed"}})
	require.NoError(t, err)
	require.Equal(t, "test.receipt", typed.Kind)
	require.JSONEq(t, `{"order":"o-1","cents":250}`, string(s.job(typed.ID).Args))
	require.Equal(t, []string{"typed"}, s.job(typed.ID).Tags)
	_, err = s.ten.EnqueueArgs(s.ctx, receipt.Receipt{Order: "o-x"}, api.EnqueueRequest{Kind: "test.echo"})
	require.ErrorContains(t, err, `the options name kind "test.echo"`, "the args name the kind")

	// Untyped, with a field the type does not have: decoding ignores it.
	untyped := s.enqueue(api.EnqueueRequest{Kind: "test.receipt", Args: json.RawMessage(`{"order":"o-2","cents":5,"note":"a newer client's field"}`)})
	for _, bad := range []struct{ args, says string }{
		{`{"order":"o-3","cents":"ten"}`, `args of job kind test.receipt do not decode into receipt.Receipt`},
		{`{"cents":1}`, `a receipt names its order`},
		{`{"order":"o-4","cents":-1}`, `"cents" is not negative`},
		{`[1,2]`, `do not decode into receipt.Receipt`},
	} {
		_, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.receipt", Args: json.RawMessage(bad.args)})
		requireCode(t, err, http.StatusBadRequest, api.CodeInvalidArgs)
		require.ErrorContains(t, err, bad.says, bad.args)
	}
	var out struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, s.ten.Tx(s.ctx, "order", receipt.Receipt{Order: "o-5", Cents: 12}, &out))
	fromTx := s.job(out.JobID)
	require.Equal(t, "test.receipt", fromTx.Kind)
	require.JSONEq(t, `{"order":"o-5","cents":12}`, string(fromTx.Args))
	require.Equal(t, []string{"order"}, fromTx.Tags)
	err = s.ten.Tx(s.ctx, "order", map[string]any{"order": "o-6", "cents": -3}, nil)
	requireCode(t, err, http.StatusBadRequest, api.CodeInvalidArgs)
	decided := s.command(api.Command{ID: "typed-p1", Aggregate: "payment", AggregateID: "p1", Type: "CreateWithTypedReceipt",
		Data: json.RawMessage(`{"amount":7}`)})
	require.Len(t, decided.JobIDs, 1)
	require.JSONEq(t, `{"order":"p1","cents":7}`, string(s.job(decided.JobIDs[0]).Args))
	// The refused enqueues and transaction wrote nothing: the ids of the
	// jobs enqueued around them run on.
	next := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":"not a number"}`)})
	ids := []string{typed.ID, untyped.ID, out.JobID, decided.JobIDs[0], next.ID}
	for i := 1; i < len(ids); i++ {
		prev, _ := strconv.Atoi(ids[i-1])
		require.Equal(t, strconv.Itoa(prev+1), ids[i], "job %d of %v: a refusal before it took no id", i, ids)
	}

	newWorker := func(id string) *worker.Worker {
		w, err := worker.New(worker.Config{URL: s.tg.client().BaseURL(), Token: token, ID: id, Logger: quietLog})
		require.NoError(t, err)
		return w
	}
	// An untyped handler reads the typed enqueue's JSON.
	plain := newWorker("untyped")
	plain.Handle("test.receipt", func(_ context.Context, job *worker.Job) (any, error) {
		var m map[string]any
		return m, job.Decode(&m)
	})
	ran, ok, err := plain.WorkOne(s.ctx, s.ten.Name())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, typed.ID, ran.JobID)
	require.Equal(t, "completed", ran.Outcome)
	require.JSONEq(t, `{"order":"o-1","cents":250}`, string(ran.Output))

	// A typed handler decodes the rest, whoever enqueued them.
	w := newWorker("typed")
	worker.Handle(w, func(_ context.Context, job *worker.JobOf[receipt.Receipt]) (any, error) {
		return map[string]any{"order": job.Args.Order, "cents": job.Args.Cents, "id": job.JobID}, nil
	})
	worker.Handle(w, func(_ context.Context, job *worker.JobOf[receipt.Echo]) (any, error) {
		return job.Args.N, nil
	})
	rs, err := w.WorkAll(s.ctx, s.ten.Name())
	require.NoError(t, err)
	outcomes := map[string]string{}
	for _, r := range rs {
		outcomes[r.JobID] = r.Outcome
	}
	require.Equal(t, map[string]string{untyped.ID: "completed", out.JobID: "completed", decided.JobIDs[0]: "completed", next.ID: "failed"}, outcomes)
	require.JSONEq(t, `{"order":"o-2","cents":5,"id":"`+untyped.ID+`"}`, string(s.job(untyped.ID).Output))
	dead := s.job(next.ID)
	require.Equal(t, "dead", dead.State, "args no attempt could decode end the job at once")
	require.Len(t, dead.Attempts, 1)
	require.Contains(t, dead.Attempts[0].Error, "job "+next.ID+": args of job kind test.echo do not decode into receipt.Echo")
}

// scenarioSearchJobs: jobs are found by a value at a path of their args or
// output, by an object their args contain, by tag and by error text; bad
// searches are refused in one line.
func scenarioSearchJobs(s *scenario) {
	t := s.t
	pro := s.enqueue(api.EnqueueRequest{Kind: "test.fast", Tags: []string{"vip"},
		Args: json.RawMessage(`{"customer":{"id":42,"plan":"pro"},"items":[1,2],"note":"hello world"}`)})
	basic := s.enqueue(api.EnqueueRequest{Kind: "test.fast", Args: json.RawMessage(`{"customer":{"id":7,"plan":"basic"}}`)})
	find := func(q url.Values) []string {
		t.Helper()
		var ids []string
		for {
			resp, err := s.ten.Search(s.ctx, q)
			require.NoError(t, err)
			for _, j := range resp.Jobs {
				ids = append(ids, j.ID)
			}
			if resp.Next == "" {
				return ids
			}
			q.Set("after", resp.Next)
		}
	}
	require.Equal(t, []string{pro.ID}, find(url.Values{"args.customer.id": {"42"}}))
	require.Equal(t, []string{basic.ID}, find(url.Values{"args.customer.plan": {"basic"}}), "a value that is not JSON is the string")
	require.Equal(t, []string{pro.ID}, find(url.Values{"args.note": {`"hello world"`}}))
	require.Equal(t, []string{pro.ID}, find(url.Values{"args.items.1": {"2"}}))
	require.Equal(t, []string{pro.ID}, find(url.Values{"args": {`{"customer":{"plan":"pro"},"items":[1,2]}`}}))
	require.Empty(t, find(url.Values{"args": {`{"items":[1]}`}}), "arrays compare whole")
	require.Equal(t, []string{pro.ID}, find(url.Values{"tag": {"vip"}}))
	require.Len(t, find(url.Values{"args.customer.id": {"42"}, "state": {"available"}}), 1)

	cs := s.claim("w", 10, 2)
	for _, c := range cs {
		if c.ID == pro.ID {
			s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "Timeout talking to the mail provider"})
		} else {
			s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeCompleted, Output: json.RawMessage(`{"sent":true}`)})
		}
	}
	require.Equal(t, []string{pro.ID}, find(url.Values{"error": {"timeout TALKING"}}), "error text, case aside")
	require.Equal(t, []string{basic.ID}, find(url.Values{"output.sent": {"true"}}))
	require.Equal(t, []string{basic.ID}, find(url.Values{"output": {`{"sent":true}`}, "state": {"completed"}}))

	for _, bad := range []url.Values{{"args.a..b": {"1"}}, {"args": {"[1]"}}, {"args.a b": {"1"}}, {"colour": {"red"}}} {
		_, err := s.ten.Search(s.ctx, bad)
		requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	}
}

// scenarioBulkRetryByFilter: a retry of every job a filter finds runs on
// the server in slices, with progress, acts only on what matches, and is
// safe to start again; bad operations are refused and write nothing.
func scenarioBulkRetryByFilter(s *scenario) {
	t := s.t
	for _, bad := range []api.OperationRequest{{Action: "explode", Filter: "state=dead"}, {Action: "retry", Filter: "colour=red"},
		{Action: "retry", Filter: "state=dead&limit=5"}} {
		_, err := s.ten.StartOperation(s.ctx, bad.Action, bad.Filter)
		requireCode(t, err, http.StatusBadRequest, api.CodeInvalidRequest)
	}
	reqs := make([]api.EnqueueRequest, 0, 160)
	for i := range 160 {
		batch := "b1"
		if i%16 == 0 {
			batch = "b2"
		}
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1, Args: json.RawMessage(`{"batch":"` + batch + `"}`)})
	}
	_, err := s.ten.EnqueueBatch(s.ctx, reqs)
	require.NoError(t, err)
	for failed := 0; failed < 160; {
		resp, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "w", Limit: 100})
		require.NoError(t, err)
		require.NotEmpty(t, resp.Jobs)
		var batch api.BatchReportRequest
		for _, c := range resp.Jobs {
			batch.Reports = append(batch.Reports, api.BatchReport{JobID: c.ID, ReportRequest: api.ReportRequest{Claim: claimOf(c, "w"),
				Outcome: api.OutcomeFailed, Error: "provider down"}})
		}
		_, err = s.ten.ReportBatch(s.ctx, batch.Reports)
		require.NoError(t, err)
		failed += len(resp.Jobs)
	}

	run := func(action, filter string) api.Operation {
		t.Helper()
		op, err := s.ten.StartOperation(s.ctx, action, filter)
		require.NoError(t, err)
		require.Equal(t, "running", op.State)
		return s.awaitOperation(op.ID)
	}
	op := run("retry", "state=dead&args.batch=b1")
	require.EqualValues(t, 150, op.Matched, "150 of the dead jobs are batch b1")
	require.EqualValues(t, 150, op.Done)
	require.Zero(t, op.Skipped)
	require.NotNil(t, op.DoneAt)
	for _, state := range []string{"available", "dead"} {
		var n int
		for after := ""; ; {
			page, err := s.ten.List(s.ctx, state, "", "", after, 500)
			require.NoError(t, err)
			n += len(page.Jobs)
			if after = page.Next; after == "" {
				break
			}
		}
		require.Equal(t, map[string]int{"available": 150, "dead": 10}[state], n, "jobs %s after the retry", state)
	}
	again := run("retry", "state=dead&args.batch=b1")
	require.Zero(t, again.Matched, "started again, it finds nothing left to do")
	cancel := run("cancel", "args.batch=b2")
	require.EqualValues(t, 10, cancel.Matched)
	require.EqualValues(t, 10, cancel.Skipped, "dead jobs cannot be cancelled: skipped, with the reason")
	require.NotEmpty(t, cancel.LastSkip)
}

// scenarioFailingNow: a tenant says what is failing now: jobs retrying or
// dead grouped by kind, state and the shape of their error (an id in it
// does not split a group), with counts, first and last times and the
// latest job; nothing once they are fixed.
func scenarioFailingNow(s *scenario) {
	t := s.t
	f, err := s.ten.Failing(s.ctx)
	require.NoError(t, err)
	require.Empty(t, f.Jobs, "a new tenant has nothing failing")
	for range 3 {
		s.enqueue(api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1})
	}
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 5})
	var dead, retry string
	for i, c := range s.claim("w", 10, 4) {
		msg := "provider timed out on order " + strconv.Itoa(1000+i)
		if c.Kind == "test.echo" {
			msg, retry = "bad address", c.ID
		} else {
			dead = c.ID
		}
		s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: msg})
	}
	f, err = s.ten.Failing(s.ctx)
	require.NoError(t, err)
	require.Len(t, f.Jobs, 2, "%+v", f.Jobs)
	top := f.Jobs[0]
	require.Equal(t, api.FailingJobs{Kind: "test.fast", State: "dead", Error: "provider timed out on order #", Example: top.Example,
		Count: 3, FirstAt: top.FirstAt, LastAt: top.LastAt, LatestJob: top.LatestJob}, top)
	require.Contains(t, top.Example, "provider timed out on order 10")
	require.False(t, top.LastAt.Before(top.FirstAt))
	require.NotEmpty(t, dead)
	require.Equal(t, "test.echo", f.Jobs[1].Kind)
	require.Equal(t, "retryable", f.Jobs[1].State)
	require.Equal(t, retry, f.Jobs[1].LatestJob)

	op, err := s.ten.StartOperation(s.ctx, "delete", "state=dead&kind=test.fast")
	require.NoError(t, err)
	require.EqualValues(t, 3, s.awaitOperation(op.ID).Done)
	f, err = s.ten.Failing(s.ctx)
	require.NoError(t, err)
	require.Len(t, f.Jobs, 1, "the dead ones, deleted, fail no more")
}

// scenarioFleetFailing: what fails in a tenant reaches the directory's
// view of the fleet (GET /v1/failing) without anyone asking the tenant:
// its alarm looks at what is failing shortly after a change and tells the
// directory, which sums the tenants' groups. A token for one tenant reads
// that tenant's own view; a prefix token only its prefix's tenants. Once
// the failing jobs are deleted, the tenant's next look clears its groups
// (under the controlled clock: in real time the next look is 30 s away).
func scenarioFleetFailing(s *scenario) {
	t := s.t
	name := s.ten.Name()
	fleet := func() api.FleetFailingResponse {
		f, err := s.tg.client().Failing(s.ctx, name)
		require.NoError(t, err)
		return f
	}
	require.Empty(t, fleet().Groups, "a new tenant has nothing failing")
	for range 3 {
		s.enqueue(api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1})
	}
	for i, c := range s.claim("w", 10, 3) {
		s.report(c, "w", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "provider timed out on order " + strconv.Itoa(1000+i)})
	}
	if p := s.tg.inProcess(); p != nil {
		// The instance goes away before its look: the next one looks.
		require.True(t, p.manager.Evict(name))
	}
	s.tg.advance(t, api.FailingNoteDelay+time.Second)
	var f api.FleetFailingResponse
	eventually(t, s.tg, func() bool { f = fleet(); return len(f.Groups) > 0 }, "the tenant tells the directory what is failing")
	require.Equal(t, int64(1), f.Tenants)
	require.Empty(t, f.Partial)
	g := f.Groups[0]
	require.Equal(t, "job", g.What)
	require.Equal(t, "test.fast", g.Name)
	require.Equal(t, "dead", g.State)
	require.Equal(t, "provider timed out on order #", g.Error)
	require.Equal(t, int64(3), g.Count)
	require.Equal(t, int64(1), g.TenantCount)
	require.NotNil(t, g.FirstAt)
	require.NotNil(t, g.LastAt)
	require.False(t, g.LastAt.Before(*g.FirstAt))
	require.Len(t, g.Tenants, 1)
	require.Equal(t, name, g.Tenants[0].Tenant)
	require.Equal(t, int64(3), g.Tenants[0].Count)
	// The drill-down: the latest job's timeline, in the tenant.
	latest := s.job(g.Tenants[0].Latest)
	require.Equal(t, "dead", string(latest.State))

	// Other prefixes see none of it; tokens see only what they cover.
	other, err := s.tg.client().Failing(s.ctx, name+"-nobody")
	require.NoError(t, err)
	require.Empty(t, other.Groups)
	later := time.Now().Add(time.Hour).Unix()
	one, err := stiletoken.Mint(token, stiletoken.Claims{ID: "fleet-one", Scope: name, Role: api.RoleReader, Exp: later})
	require.NoError(t, err)
	status, body := s.callAs(one, "GET", api.FailingPath, "")
	require.Equal(t, 403, status, body)
	require.Contains(t, body, "/v1/t/"+name+"/failing")
	pre, err := stiletoken.Mint(token, stiletoken.Claims{ID: "fleet-prefix", Scope: name[:len(name)-1] + "*", Role: api.RoleReader, Exp: later})
	require.NoError(t, err)
	status, body = s.callAs(pre, "GET", api.FailingPath, "")
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"tenant":"`+name+`"`, "a prefix token sees its tenants")
	status, body = s.callAs(pre, "GET", api.FailingPath+"?prefix=zz", "")
	require.Equal(t, 403, status, body)
	status, body = s.callAs(token, "GET", api.FailingPath+"?prefx=a", "")
	require.Equal(t, 400, status, body)
	require.Contains(t, body, "unknown parameter")
	status, _ = s.callAs(token, "POST", api.FailingPath, "{}")
	require.Equal(t, 405, status)

	if s.tg.realTime() {
		return
	}
	op, err := s.ten.StartOperation(s.ctx, "delete", "state=dead&kind=test.fast")
	require.NoError(t, err)
	require.EqualValues(t, 3, s.awaitOperation(op.ID).Done)
	s.tg.advance(t, api.FailingNoteEvery+time.Second)
	require.Empty(t, fleet().Groups, "the tenant's next look clears what it told")
}

// scenarioFleetBulkRetry: one action fixes a failure across tenants. POST
// /v1/operations gives a retry by filter to every tenant of a prefix
// through the directory; reading the operation follows the tenants'
// operations to done, and every dead job matched runs again. A filter the
// first tenant refuses, an unknown action, a prefix without tenants, a
// reader's or one tenant's token are refused, and start nothing.
func scenarioFleetBulkRetry(s *scenario) {
	t := s.t
	name := s.ten.Name()
	other := s.tg.client().Tenant(name + "b")
	_, err := other.Create(s.ctx)
	require.NoError(t, err)
	fail := func(ten *client.Tenant, n int) {
		for range n {
			_, err := ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1, Queue: "fleet"})
			require.NoError(t, err)
		}
		cl, err := ten.Claim(s.ctx, api.ClaimRequest{Worker: "w", Queues: []string{"fleet"}, Limit: n})
		require.NoError(t, err)
		require.Len(t, cl.Jobs, n)
		for _, c := range cl.Jobs {
			_, err := ten.Report(s.ctx, c.ID, api.ReportRequest{Claim: api.Claim{Worker: "w", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
				Outcome: api.OutcomeFailed, Error: "gateway down"})
			require.NoError(t, err)
		}
	}
	fail(s.ten, 2)
	fail(other, 3)
	cl := s.tg.client()
	refusals := []struct {
		req    api.FleetOperationRequest
		status int
		says   string
	}{
		{api.FleetOperationRequest{Action: "explode", Filter: "state=dead", Prefix: name}, 400, "is not retry, cancel or delete"},
		{api.FleetOperationRequest{Action: "retry", Filter: "colour=red", Prefix: name}, 400, "colour"},
		{api.FleetOperationRequest{Action: "retry", Filter: "state=dead", Prefix: name + "-nobody"}, 404, "no tenant"},
	}
	for _, r := range refusals {
		status, body := s.callAs(token, "POST", api.FleetOperationsPath, string(r.req.AppendJSON(nil)))
		require.Equal(t, r.status, status, body)
		require.Contains(t, body, r.says)
	}
	status, body := s.callAs(token, "POST", api.FleetOperationsPath, `{"action":"retry",`)
	require.Equal(t, 400, status, body)
	later := time.Now().Add(time.Hour).Unix()
	reader, err := stiletoken.Mint(token, stiletoken.Claims{ID: "fleet-reader", Scope: "*", Role: api.RoleReader, Exp: later})
	require.NoError(t, err)
	start := string(api.FleetOperationRequest{Action: "retry", Filter: "state=dead&kind=test.fast", Prefix: name}.AppendJSON(nil))
	status, body = s.callAs(reader, "POST", api.FleetOperationsPath, start)
	require.Equal(t, 403, status, body)
	one, err := stiletoken.Mint(token, stiletoken.Claims{ID: "fleet-one", Scope: name, Role: api.RoleOperator, Exp: later})
	require.NoError(t, err)
	status, body = s.callAs(one, "POST", api.FleetOperationsPath, start)
	require.Equal(t, 403, status, body)
	for _, ten := range []*client.Tenant{s.ten, other} {
		ops, err := ten.Operations(s.ctx)
		require.NoError(t, err)
		require.Empty(t, ops, "a refused operation started nothing")
	}

	op, err := cl.StartFleetOperation(s.ctx, api.FleetOperationRequest{Action: "retry", Filter: "state=dead&kind=test.fast", Prefix: name})
	require.NoError(t, err)
	require.Equal(t, "retry", op.Action)
	require.Equal(t, name, op.Prefix)
	// The directory follows it to its end with nobody reading it: the list
	// (which reads no tenant) comes to say done.
	listed := func() string {
		l, err := cl.FleetOperations(s.ctx)
		require.NoError(t, err)
		for _, o := range l.Operations {
			if o.ID == op.ID {
				require.Empty(t, o.Operations, "a list names no tenant's part")
				return o.State
			}
		}
		return "missing"
	}
	for until := time.Now().Add(30 * time.Second); listed() != "done" && time.Now().Before(until); {
		s.tg.advance(t, 20*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, "done", listed())
	op, err = cl.FleetOperation(s.ctx, op.ID)
	require.NoError(t, err)
	require.Equal(t, "done", op.State, "%+v", op)
	require.Equal(t, int64(2), op.Tenants)
	require.Equal(t, int64(5), op.Matched)
	require.Equal(t, int64(5), op.Done)
	require.Zero(t, op.Refused)
	require.NotNil(t, op.DoneAt)
	require.Len(t, op.Operations, 2)
	require.Equal(t, name, op.Operations[0].Tenant)
	require.Equal(t, name+"b", op.Operations[1].Tenant)
	for ten, want := range map[*client.Tenant]int{s.ten: 2, other: 3} {
		l, err := ten.List(s.ctx, "dead", "", "", "", 10)
		require.NoError(t, err)
		require.Empty(t, l.Jobs, "no dead job is left in %s", ten.Name())
		l, err = ten.List(s.ctx, "available", "fleet", "", "", 10)
		require.NoError(t, err)
		require.Len(t, l.Jobs, want, "each runs again in %s", ten.Name())
	}
}

// awaitOperation follows the tenant's bulk operation id to done (the
// alarm runs its slices, and so does each read), failing the test if it
// does not end.
func (s *scenario) awaitOperation(id string) api.Operation {
	s.t.Helper()
	var op api.Operation
	var err error
	for range 200 {
		if op, err = s.ten.Operation(s.ctx, id); err == nil && op.State == "done" {
			return op
		}
		s.tg.advance(s.t, 20*time.Millisecond)
		if s.tg.realTime() {
			time.Sleep(50 * time.Millisecond)
		}
	}
	s.t.Fatalf("operation %s never finished: %+v, %v", id, op, err)
	return op
}
