package e2e_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
)

const day = 24 * time.Hour

// storageRows is the rows GET /storage counts of kind.
func (s *scenario) storageRows(kind string) int64 {
	s.t.Helper()
	st, err := s.ten.Storage(s.ctx)
	require.NoError(s.t, err)
	for _, k := range st.Kinds {
		if k.Kind == kind {
			return k.Rows
		}
	}
	s.t.Fatalf("GET /storage has no kind %q: %+v", kind, st.Kinds)
	return 0
}

// scenarioRetention: the retention policy, its bad input, and the storage
// counters, in every host; under a controlled clock, two simulated months
// of steady work in which the tenant's size stays bounded while nothing
// still needed goes: a parent whose dependent waits, a job inside its
// unique window, a slow reaction's open delivery, and every event.
func scenarioRetention(s *scenario) {
	t := s.t
	r, err := s.ten.Retention(s.ctx)
	require.NoError(t, err)
	require.Equal(t, api.DefaultRetention, r.Effective, "the test module sets no policy")
	require.Empty(t, r.Overridden)
	for body, msg := range map[string]string{
		`{"completed_ms":30}`:                "completed_ms 30 must be 0 (keep forever) or within 60000-",
		`{"dead_ms":-1}`:                     "dead_ms -1 must be 0",
		`{"completed_ms":"1d"}`:              "completed_ms",
		`{"completed_ms":1,`:                 "",
		`{"kept_ms":86400000}`:               "kept_ms",
		`{"audit_ms":86400000,"audit_ms":1}`: "audit_ms",
	} {
		status, out, err := s.tg.client().Raw(s.ctx, "PUT", "/v1/t/"+s.ten.Name()+"/retention", []byte(body), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, "%s: %s", body, out)
		require.Contains(t, string(out), msg, body)
	}
	r2, err := s.ten.Retention(s.ctx)
	require.NoError(t, err)
	require.Equal(t, r.Effective, r2.Effective, "a refused policy changed nothing")

	// The counters follow writes.
	before := s.storageRows("jobs")
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"n":1}`)})
	require.Equal(t, before+1, s.storageRows("jobs"))
	st, err := s.ten.Storage(s.ctx)
	require.NoError(t, err)
	require.Positive(t, st.DatabaseBytes, "the host measured the database")
	require.Equal(t, int64(api.StorageLimit), st.LimitBytes)
	require.Empty(t, st.Warning)
	require.NoError(t, s.ten.Delete(s.ctx, mustCancel(s, j.ID)))
	require.Equal(t, before, s.storageRows("jobs"), "a deleted job is uncounted")

	// A partial override: the audit list for two days, the rest as the module says.
	r, err = s.ten.SetRetention(s.ctx, json.RawMessage(`{"audit_ms":172800000}`))
	require.NoError(t, err)
	require.Equal(t, []string{"audit_ms"}, r.Overridden)
	require.Equal(t, int64(2*day/time.Millisecond), r.Effective.AuditMs)
	require.Equal(t, api.DefaultRetention.CompletedMs, r.Effective.CompletedMs)
	if s.tg.realTime() {
		return // months pass only under a controlled clock
	}

	// What must outlive its window: a parent whose dependent waits for
	// another parent, scheduled in three weeks; a job inside a ten-day
	// unique window; a dead job; a slow reaction's delivery.
	parent := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	later := time.UnixMilli(p(s).clock.Now()).Add(21 * day)
	blocker := s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: &later})
	child := s.enqueue(api.EnqueueRequest{Kind: "test.echo", DependsOn: []string{parent.ID, blocker.ID}})
	unique := s.enqueue(api.EnqueueRequest{Kind: "test.echo", UniqueKey: "monthly-report", UniqueWindowMs: (10 * day).Milliseconds()})
	doomed := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	for _, c := range s.claim("w", 10, 3) {
		out := completed(claimOf(c, "w"), `{}`)
		if c.ID == doomed.ID {
			out = api.ReportRequest{Claim: claimOf(c, "w"), Outcome: api.OutcomeFailed, Error: "boom", Final: true}
		}
		_, err := s.ten.Report(s.ctx, c.ID, out)
		require.NoError(t, err)
	}
	require.Equal(t, "dead", s.job(doomed.ID).State)
	s.createPayment("slow", 10)
	s.command(api.Command{ID: "slow-refund", Aggregate: "payment", AggregateID: "slow", Type: "RequestRefund"})
	slow := s.deliveries("slow-worker", 10, 1, testapp.RefundPolicy)[0]
	_, err = s.ten.PauseQueue(s.ctx, "nothing", true) // an operator action, audited
	require.NoError(t, err)
	events := s.storageRows("events")

	maxJobs, maxAttempts := int64(0), int64(0)
	for d := 1; d <= 60; d++ {
		// A day's steady flow: 24 jobs, one an hour.
		for h := 0; h < 24; h++ {
			s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"day":` + strconv.Itoa(d) + `}`)})
			for _, c := range s.claim("w", 10, 1) {
				_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "w"), `{"ok":true}`))
				require.NoError(t, err)
			}
			s.tg.advance(t, time.Hour)
		}
		maxJobs, maxAttempts = max(maxJobs, s.storageRows("jobs")), max(maxAttempts, s.storageRows("job_attempts"))
		switch d {
		case 3:
			require.Equal(t, "completed", s.job(parent.ID).State, "a parent whose dependent waits is kept")
			require.Equal(t, "completed", s.job(unique.ID).State, "a job inside its unique window is kept")
			again := s.enqueue(api.EnqueueRequest{Kind: "test.echo", UniqueKey: "monthly-report", UniqueWindowMs: (10 * day).Milliseconds()})
			require.Equal(t, unique.ID, again.ID, "and still answers its unique key")
			require.Equal(t, "dead", s.job(doomed.ID).State, "a dead job is kept a week")
			require.Zero(t, s.storageRows("audit"), "the tenant keeps its audit list two days")
		case 9:
			_, err := s.ten.Job(s.ctx, doomed.ID)
			requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
		case 12:
			_, err := s.ten.Job(s.ctx, unique.ID)
			requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
			_, err = s.ten.GetCommand(s.ctx, "slow-refund")
			requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
			require.Equal(t, "completed", s.job(parent.ID).State, "the child still waits")
		case 21:
			for _, c := range s.claim("w", 10, 1) {
				require.Equal(t, blocker.ID, c.ID)
				_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "w"), `{}`))
				require.NoError(t, err)
			}
			for _, c := range s.claim("w", 10, 1) {
				require.Equal(t, child.ID, c.ID, "the child ran, its parents' outcomes intact")
				_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "w"), `{}`))
				require.NoError(t, err)
			}
		case 24:
			_, err := s.ten.Job(s.ctx, parent.ID)
			requireCode(t, err, http.StatusNotFound, api.CodeNotFound)
		case 30:
			// The slow reaction comes back a month later: its delivery was
			// kept open, and its event is there.
			again := s.deliveries("slow-worker-2", 10, 1, testapp.RefundPolicy)[0]
			require.Equal(t, slow.Event.Seq, again.Event.Seq)
			res := s.settleOne(succeeded(again, api.Command{ID: "slow-refunded", Aggregate: "payment", AggregateID: "slow",
				Type: "RecordRefund", Data: json.RawMessage(`{"refund_id":"re_slow"}`)}))
			require.Nil(t, res.Error)
			events += 1
		}
	}
	// Bounded: a day of completed jobs and the hours retention waits to look.
	require.LessOrEqual(t, maxJobs, int64(40), "jobs stored at most on any day")
	require.LessOrEqual(t, maxAttempts, int64(40), "attempts stored at most on any day")
	require.Equal(t, events, s.storageRows("events"), "events are kept")
	require.Len(t, s.stream("payment:slow"), 3)
}

func mustCancel(s *scenario, id string) string {
	s.t.Helper()
	_, err := s.ten.Cancel(s.ctx, id, "")
	require.NoError(s.t, err)
	return id
}

func p(s *scenario) *inProcess { return s.tg.inProcess() }
