package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	stiletoken "github.com/stile-run/stile/token"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// lease is the lease of test.fast jobs (see testapp): short, so that the
// workerd layer waits for real leases quickly.
const lease = time.Second

// maxBackoff is test.fast's longest retry delay.
const maxBackoff = time.Second

var tenantSeq atomic.Int64

// scenario is one conformance scenario's view of a target.
type scenario struct {
	t   *testing.T
	tg  target
	ctx context.Context
	ten *client.Tenant
}

func newScenario(t *testing.T, tg target) *scenario {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	name = strings.TrimLeft(name, "-_") + "-" + strconv.FormatInt(tenantSeq.Add(1), 10)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	ten := tg.client().Tenant(name)
	_, err := ten.Create(ctx)
	require.NoError(t, err, "create the scenario's tenant")
	return &scenario{t: t, tg: tg, ctx: ctx, ten: ten}
}

func (s *scenario) enqueue(r api.EnqueueRequest) api.Job {
	s.t.Helper()
	j, err := s.ten.Enqueue(s.ctx, r)
	require.NoError(s.t, err)
	return j
}

// claim claims up to limit jobs for worker, requiring exactly want. In real
// time it long-polls, so work that the alarm makes ready arrives.
func (s *scenario) claim(worker string, limit, want int, queues ...string) []api.ClaimedJob {
	s.t.Helper()
	r := api.ClaimRequest{Worker: worker, Limit: limit, Queues: queues}
	if s.tg.realTime() && want > 0 {
		r.WaitMs = 15_000
	}
	resp, err := s.ten.Claim(s.ctx, r)
	require.NoError(s.t, err)
	require.Len(s.t, resp.Jobs, want, "claimed by %s", worker)
	return resp.Jobs
}

func (s *scenario) job(id string) api.Job {
	s.t.Helper()
	j, err := s.ten.Job(s.ctx, id)
	require.NoError(s.t, err)
	return j
}

func claimOf(c api.ClaimedJob, worker string) api.Claim {
	return api.Claim{Worker: worker, Attempt: c.Attempt, LeaseToken: c.LeaseToken}
}

func completed(c api.Claim, output string) api.ReportRequest {
	return api.ReportRequest{Claim: c, Outcome: api.OutcomeCompleted, Output: json.RawMessage(output)}
}

func requireCode(t *testing.T, err error, status int, code api.Code) {
	t.Helper()
	var ce *api.Error
	require.True(t, errors.As(err, &ce), "want a %d %s error, got %v", status, code, err)
	require.Equal(t, status, ce.Status, "status of %v", err)
	require.Equal(t, code, ce.Code, "code of %v", err)
	require.NotEmpty(t, ce.Message)
	require.NotContains(t, ce.Message, "\n", "error messages are one line")
}

// runSuite runs every scenario against tg. Under a controlled clock they
// run one after another (they share the clock); in real time in parallel.
func runSuite(t *testing.T, tg target) {
	scenarios := []struct {
		name string
		run  func(*scenario)
	}{
		{name: "EnqueueClaimReport", run: scenarioEnqueueClaimReport},
		{name: "SeedRaceStaleReport", run: scenarioSeedRace},
		{name: "AlarmExpiresLease", run: scenarioAlarmExpiresLease},
		{name: "HeartbeatExtendsLease", run: scenarioHeartbeat},
		{name: "ProgressFencedLikeOutput", run: scenarioProgress},
		{name: "Watch", run: scenarioWatch},
		{name: "WatchEvents", run: scenarioWatchEvents},
		{name: "WatchSendsOnlyCommitted", run: scenarioWatchSendsOnlyCommitted},
		{name: "FenceRefusals", run: scenarioFenceRefusals},
		{name: "DuplicateReport", run: scenarioDuplicateReport},
		{name: "FailureRetryDead", run: scenarioFailureRetryDead},
		{name: "BatchEnqueueAndReports", run: scenarioBatches},
		{name: "ClaimOrderAndQueues", run: scenarioClaimOrder},
		{name: "ScheduledJob", run: scenarioScheduled},
		{name: "LongPollClaim", run: scenarioLongPoll},
		{name: "BadInputChangesNothing", run: scenarioBadInput},
		{name: "Auth", run: scenarioAuth},
		{name: "RoutesAndPaths", run: scenarioRoutesAndPaths},
		{name: "LargeArgs", run: scenarioLargeArgs},
		{name: "TrapRollsBack", run: scenarioTrap},
		{name: "TrapAfterTheCommitSaysSo", run: scenarioTrapAfterCommit},
		{name: "PagesStopAtTheirByteBudget", run: scenarioPagesStopAtTheirByteBudget},
		{name: "Dependencies", run: scenarioDependencies},
		{name: "StaleReportUnlatchesNothing", run: scenarioStaleReportUnlatchesNothing},
		{name: "ConcurrencyLimits", run: scenarioConcurrencyLimits},
		{name: "RateLimits", run: scenarioRateLimits},
		{name: "DebounceAndThrottle", run: scenarioDebounceAndThrottle},
		{name: "Cancel", run: scenarioCancel},
		{name: "SnoozeFinalRetryDelete", run: scenarioSnoozeFinalRetryDelete},
		{name: "TagsFollowTheFence", run: scenarioTagsFollowTheFence},
		{name: "UniqueEnqueue", run: scenarioUniqueEnqueue},
		{name: "Timeout", run: scenarioTimeout},
		{name: "ListAndCounts", run: scenarioListAndCounts},
		{name: "SearchJobs", run: scenarioSearchJobs},
		{name: "BulkRetryByFilter", run: scenarioBulkRetryByFilter},
		{name: "FailingNow", run: scenarioFailingNow},
		{name: "FleetFailing", run: scenarioFleetFailing},
		{name: "FleetBulkRetry", run: scenarioFleetBulkRetry},
		{name: "Schedules", run: scenarioSchedules},
		{name: "TransactionalEnqueue", run: scenarioTransactionalEnqueue},
		{name: "TypedArgs", run: scenarioTypedArgs},
		{name: "QueriesSayWhenStale", run: scenarioQueriesSayWhenStale},
		{name: "TypedEventsAndCommands", run: scenarioTypedEventsAndCommands},
		{name: "EventLog", run: scenarioEventLog},
		{name: "Commands", run: scenarioCommands},
		{name: "RefundStory", run: scenarioRefundStory},
		{name: "Takeover", run: scenarioTakeover},
		{name: "ReactionOrder", run: scenarioReactionOrder},
		{name: "DelayAndSkip", run: scenarioDelayAndSkip},
		{name: "PauseAReaction", run: scenarioPauseAReaction},
		{name: "ReplayAReaction", run: scenarioReplayAReaction},
		{name: "ReplayInSlices", run: scenarioReplayInSlices},
		{name: "ProcessDeadline", run: scenarioProcessDeadline},
		{name: "ScheduledCommand", run: scenarioScheduledCommand},
		{name: "RejectedCommandFailsDelivery", run: scenarioRejectedCommandFailsDelivery},
		{name: "EventsBadInputChangesNothing", run: scenarioEventsBadInput},
		{name: "AggregateTimeout", run: scenarioAggregateTimeout},
		{name: "ProjectionFifthEvent", run: scenarioProjectionFifthEvent},
		{name: "ProjectionWriteOutside", run: scenarioProjectionWriteOutside},
		{name: "ProjectionRebuild", run: scenarioProjectionRebuild},
		{name: "ProjectionFaults", run: scenarioProjectionFaults},
		{name: "Directory", run: scenarioDirectory},
		{name: "WaitForAJob", run: scenarioWaitForAJob},
		{name: "WhyItRanTwice", run: scenarioWhyItRanTwice},
		{name: "PauseAQueue", run: scenarioPauseAQueue},
		{name: "ScopedTokens", run: scenarioScopedTokens},
		{name: "TenantsExistOnceCreated", run: scenarioTenantsExistOnceCreated},
		{name: "EveryRouteRefusesBadInput", run: scenarioBadInputChangesNothing},
		{name: "Retention", run: scenarioRetention},
		{name: "Erase", run: scenarioErase},
		{name: "ExportImport", run: scenarioExportImport},
		{name: "ImportHoldsTheTenant", run: scenarioImportHoldsTheTenant},
		{name: "HeldClaimsAreBounded", run: scenarioHeldClaimsAreBounded},
		{name: "HeldClaimWakesForItsQueueOnly", run: scenarioHeldClaimWakesForItsQueueOnly},
		{name: "QueueNamesAreBounded", run: scenarioQueueNamesAreBounded},
		{name: "UsageAndBudget", run: scenarioUsageAndBudget},
		{name: "TenantMetrics", run: scenarioTenantMetrics},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if tg.realTime() {
				t.Parallel()
			}
			sc.run(newScenario(t, tg))
		})
	}
}

func scenarioEnqueueClaimReport(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"hello":"world"}`)})
	require.Equal(t, "available", j.State)
	require.Equal(t, int64(0), j.Attempt)
	require.Equal(t, "default", j.Queue)
	require.Empty(t, j.Args, "an enqueue does not echo the args back")
	require.JSONEq(t, `{"hello":"world"}`, string(s.job(j.ID).Args))

	c := s.claim("w1", 10, 1)[0]
	require.Equal(t, j.ID, c.ID)
	require.Equal(t, int64(1), c.Attempt)
	require.Len(t, c.LeaseToken, 32)
	require.True(t, c.LeaseUntil.After(c.CreatedAt) || c.LeaseUntil.Equal(c.CreatedAt.Add(time.Minute)))

	running := s.job(j.ID)
	require.Equal(t, "running", running.State)
	require.NotNil(t, running.Running)
	require.Equal(t, "w1", running.Running.Worker)

	r, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "w1"), `{"echo":"world"}`))
	require.NoError(t, err)
	require.False(t, r.Duplicate)
	require.Equal(t, "completed", r.State)
	require.Equal(t, j.ID, r.JobID)
	require.Equal(t, int64(1), r.Attempt)

	done := s.job(j.ID)
	require.Equal(t, "completed", done.State)
	require.JSONEq(t, `{"echo":"world"}`, string(done.Output))
	require.NotNil(t, done.FinishedAt)
	require.Nil(t, done.Running)
	require.Len(t, done.Attempts, 1)
	require.Equal(t, "completed", done.Attempts[0].Outcome)
	require.Equal(t, "report", done.Attempts[0].NoticedBy)
	require.Empty(t, done.Rejections)

	s.claim("w1", 10, 0) // nothing left
}

// scenarioSeedRace is the race of "The Effect-Once Fence": A claims and
// stalls past its lease, B claims the next attempt, A's late report is
// refused and stores nothing, B's commits, and exactly one terminal
// transition is recorded.
func scenarioSeedRace(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	a := s.claim("worker-a", 1, 1)[0]
	require.Equal(t, int64(1), a.Attempt)

	s.tg.advance(t, lease+100*time.Millisecond) // A stalls; its lease lapses
	s.tg.advance(t, maxBackoff)                 // the retry's backoff passes
	b := s.claim("worker-b", 1, 1)[0]
	require.Equal(t, j.ID, b.ID)
	require.Equal(t, int64(2), b.Attempt, "the next claim takes the next attempt number")

	_, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(a, "worker-a"), `{"by":"a"}`))
	requireCode(t, err, http.StatusConflict, api.CodeStaleAttempt)
	require.ErrorIs(t, err, api.ErrStale)

	mid := s.job(j.ID)
	require.Equal(t, "running", mid.State)
	require.Empty(t, mid.Output, "a refused report stores no output")
	require.Equal(t, "worker-b", mid.Running.Worker)

	r, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(b, "worker-b"), `{"by":"b"}`))
	require.NoError(t, err)
	require.Equal(t, "completed", r.State)

	final := s.job(j.ID)
	require.Equal(t, "completed", final.State)
	require.JSONEq(t, `{"by":"b"}`, string(final.Output))
	require.Len(t, final.Attempts, 2)
	require.Equal(t, "lease_expired", final.Attempts[0].Outcome)
	require.Equal(t, "worker-a", final.Attempts[0].Worker)
	require.Contains(t, []string{"alarm", "request"}, final.Attempts[0].NoticedBy)
	require.Equal(t, "completed", final.Attempts[1].Outcome)
	require.Equal(t, "worker-b", final.Attempts[1].Worker)
	terminal := 0
	for _, at := range final.Attempts {
		if at.Outcome == "completed" {
			terminal++
		}
	}
	require.Equal(t, 1, terminal, "exactly one terminal transition")
	require.Len(t, final.Rejections, 1, "the history shows A's refused report")
	rej := final.Rejections[0]
	require.Equal(t, "report", rej.Request)
	require.Equal(t, "worker-a", rej.Worker)
	require.Equal(t, int64(1), rej.Attempt)
	require.Equal(t, "completed", rej.Outcome)
	require.Equal(t, api.CodeStaleAttempt, rej.Code)
}

// scenarioAlarmExpiresLease shows lease expiry happens with nobody calling:
// the tenant's own alarm notices it.
func scenarioAlarmExpiresLease(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	s.claim("sleeper", 1, 1)
	// A refused request in between must not disturb the alarm.
	_, err := s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "no.such.kind"})
	requireCode(t, err, http.StatusBadRequest, api.CodeUnknownKind)
	if s.tg.realTime() {
		// No request at all while the lease lapses and the alarm fires.
		time.Sleep(lease + 4*time.Second)
	} else {
		s.tg.advance(t, lease)
	}
	got := s.job(j.ID)
	require.Len(t, got.Attempts, 1)
	require.Equal(t, "lease_expired", got.Attempts[0].Outcome)
	require.Equal(t, "alarm", got.Attempts[0].NoticedBy, "the alarm, not a request, expired the lease")
	require.Equal(t, int64(1), got.Failures, "an expired lease counts as a failed attempt")
	require.Contains(t, []string{"retryable", "available"}, got.State)
}

func scenarioHeartbeat(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", LeaseMs: 2000})
	c := s.claim("hb", 1, 1)[0]
	s.tg.advance(t, 1200*time.Millisecond)
	hb, err := s.ten.Heartbeat(s.ctx, j.ID, claimOf(c, "hb"))
	require.NoError(t, err)
	require.True(t, hb.LeaseUntil.After(c.LeaseUntil), "heartbeat extends the lease")
	s.tg.advance(t, 1200*time.Millisecond) // past the first lease, inside the second
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "hb"), `1`))
	require.NoError(t, err, "the extended lease is still live")

	// A lease that lapsed answers a heartbeat with "lost".
	j2 := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	c2 := s.claim("hb", 1, 1)[0]
	require.Equal(t, j2.ID, c2.ID)
	s.tg.advance(t, lease+100*time.Millisecond)
	_, err = s.ten.Heartbeat(s.ctx, j2.ID, claimOf(c2, "hb"))
	requireCode(t, err, http.StatusConflict, api.CodeLeaseExpired)
	got := s.job(j2.ID)
	require.Equal(t, "heartbeat", got.Rejections[0].Request)
}

// scenarioProgress: a heartbeat's progress is kept on the job; a stale
// one is refused and writes nothing; too large or not JSON is refused
// before anything is read; a new claim clears it.
func scenarioProgress(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast"})
	a := s.claim("pa", 1, 1)[0]
	_, err := s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(a, "pa"), json.RawMessage(`{"done":1,"of":3}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"done":1,"of":3}`, string(s.job(j.ID).Progress))
	_, err = s.ten.Heartbeat(s.ctx, j.ID, claimOf(a, "pa"))
	require.NoError(t, err)
	require.JSONEq(t, `{"done":1,"of":3}`, string(s.job(j.ID).Progress), "a heartbeat without progress keeps the last")

	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(a, "pa"), json.RawMessage(`"`+strings.Repeat("x", api.MaxProgressBytes)+`"`))
	requireCode(t, err, http.StatusBadRequest, api.CodeTooLarge)
	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, api.Claim{Worker: "intruder", Attempt: a.Attempt, LeaseToken: a.LeaseToken}, json.RawMessage(`{"done":9}`))
	requireCode(t, err, http.StatusConflict, api.CodeOtherWorker)
	require.JSONEq(t, `{"done":1,"of":3}`, string(s.job(j.ID).Progress), "refused progress writes nothing")

	// A's lease lapses, B claims: the progress is B's to publish, and A's
	// late one is refused.
	s.tg.advance(t, lease+100*time.Millisecond)
	s.tg.advance(t, maxBackoff)
	b := s.claim("pb", 1, 1)[0]
	require.Equal(t, j.ID, b.ID)
	require.Empty(t, s.job(j.ID).Progress, "a new claim clears the progress")
	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(a, "pa"), json.RawMessage(`{"done":2}`))
	require.ErrorIs(t, err, api.ErrStale)
	require.Empty(t, s.job(j.ID).Progress, "a stale heartbeat's progress is not kept")
	_, err = s.ten.HeartbeatProgress(s.ctx, j.ID, claimOf(b, "pb"), json.RawMessage(`{"done":3}`))
	require.NoError(t, err)
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(b, "pb"), `1`))
	require.NoError(t, err)
	require.JSONEq(t, `{"done":3}`, string(s.job(j.ID).Progress), "the last progress stays after the end")
}

func scenarioFenceRefusals(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	c := s.claim("owner", 1, 1)[0]
	before := s.job(j.ID)

	cases := []struct {
		claim api.Claim
		code  api.Code
	}{
		{api.Claim{Worker: "intruder", Attempt: c.Attempt, LeaseToken: c.LeaseToken}, api.CodeOtherWorker},
		{api.Claim{Worker: "owner", Attempt: c.Attempt, LeaseToken: strings.Repeat("0", 32)}, api.CodeBadToken},
		{api.Claim{Worker: "owner", Attempt: c.Attempt + 1, LeaseToken: c.LeaseToken}, api.CodeStaleAttempt},
	}
	for _, tc := range cases {
		_, err := s.ten.Report(s.ctx, j.ID, completed(tc.claim, `"forged"`))
		requireCode(t, err, http.StatusConflict, tc.code)
		_, err = s.ten.Heartbeat(s.ctx, j.ID, tc.claim)
		requireCode(t, err, http.StatusConflict, tc.code)
	}
	after := s.job(j.ID)
	require.Equal(t, before.State, after.State)
	require.Equal(t, before.Running, after.Running, "refusals change nothing about the claim")
	require.Empty(t, after.Output)
	require.Len(t, after.Rejections, 6, "each refusal is audited")

	// Unknown job: 404, for reports and heartbeats alike.
	_, err := s.ten.Report(s.ctx, "999999", completed(claimOf(c, "owner"), `1`))
	requireCode(t, err, http.StatusNotFound, api.CodeNotFound)

	// The owner still reports fine.
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "owner"), `"real"`))
	require.NoError(t, err)
	require.JSONEq(t, `"real"`, string(s.job(j.ID).Output))
}

func scenarioDuplicateReport(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	c := claimOf(s.claim("dup", 1, 1)[0], "dup")
	first, err := s.ten.Report(s.ctx, j.ID, completed(c, `{"n":1}`))
	require.NoError(t, err)
	require.False(t, first.Duplicate)

	// A retried report (its response was lost) is answered, not refused.
	again, err := s.ten.Report(s.ctx, j.ID, completed(c, `{"n":1}`))
	require.NoError(t, err)
	require.True(t, again.Duplicate)
	require.Equal(t, "completed", again.State)

	// A different outcome for the same attempt is refused.
	_, err = s.ten.Report(s.ctx, j.ID, api.ReportRequest{Claim: c, Outcome: api.OutcomeFailed, Error: "late"})
	requireCode(t, err, http.StatusConflict, api.CodeAlreadyReported)
	got := s.job(j.ID)
	require.Len(t, got.Attempts, 1)
	require.JSONEq(t, `{"n":1}`, string(got.Output))
}

func scenarioFailureRetryDead(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 2})
	c1 := s.claim("f", 1, 1)[0]
	r, err := s.ten.Report(s.ctx, j.ID, api.ReportRequest{Claim: claimOf(c1, "f"), Outcome: api.OutcomeFailed, Error: "boom 1"})
	require.NoError(t, err)
	require.Equal(t, "retryable", r.State)
	require.Equal(t, int64(1), r.Failures)
	require.True(t, r.RunAt.After(c1.LeaseUntil.Add(-lease)), "the retry waits for its backoff")

	s.tg.advance(t, maxBackoff)
	c2 := s.claim("f", 1, 1)[0]
	require.Equal(t, int64(2), c2.Attempt)
	require.Equal(t, int64(1), c2.Failures)
	r, err = s.ten.Report(s.ctx, j.ID, api.ReportRequest{Claim: claimOf(c2, "f"), Outcome: api.OutcomeFailed, Error: "boom 2"})
	require.NoError(t, err)
	require.Equal(t, "dead", r.State, "the retry budget is spent")
	require.NotNil(t, s.job(j.ID).FinishedAt)

	got := s.job(j.ID)
	require.Equal(t, "boom 2", got.LastError)
	require.Len(t, got.Attempts, 2)
	require.Equal(t, "boom 1", got.Attempts[0].Error, "each attempt's error is kept")
	require.Equal(t, "boom 2", got.Attempts[1].Error)
	s.tg.advance(t, maxBackoff)
	s.claim("f", 1, 0) // dead jobs are never claimed
}

func scenarioBatches(s *scenario) {
	t := s.t
	reqs := make([]api.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))}
	}
	js, err := s.ten.EnqueueBatch(s.ctx, reqs)
	require.NoError(t, err)
	require.Len(t, js, 5)
	cs := s.claim("batcher", 5, 5)
	for i, c := range cs {
		require.Equal(t, js[i].ID, c.ID, "claim order is priority, run_at, id")
	}
	reports := make([]api.BatchReport, 0, 6)
	for i, c := range cs {
		cl := claimOf(c, "batcher")
		if i == 2 {
			cl.LeaseToken = strings.Repeat("f", 32) // one forged report in the batch
		}
		reports = append(reports, api.BatchReport{JobID: c.ID, ReportRequest: completed(cl, fmt.Sprintf(`{"done":%d}`, i))})
	}
	reports = append(reports, api.BatchReport{JobID: "424242", ReportRequest: completed(claimOf(cs[0], "batcher"), `1`)})
	results, err := s.ten.ReportBatch(s.ctx, reports)
	require.NoError(t, err)
	require.Len(t, results, 6)
	for i, r := range results[:5] {
		if i == 2 {
			require.NotNil(t, r.Error)
			require.Equal(t, api.CodeBadToken, r.Error.Code, "each report is fenced on its own")
			continue
		}
		require.Nil(t, r.Error, "report %d", i)
		require.Equal(t, "completed", r.State)
	}
	require.Equal(t, api.CodeNotFound, results[5].Error.Code)
	require.Equal(t, "running", s.job(cs[2].ID).State)
	require.JSONEq(t, `{"done":4}`, string(s.job(cs[4].ID).Output))

	// A batch of large jobs keeps its order and every job its args.
	big := make([]api.EnqueueRequest, 5)
	for i := range big {
		args, _ := json.Marshal(map[string]any{"i": i, "pad": strings.Repeat("x", 600_000), "s": "é\n\" "})
		big[i] = api.EnqueueRequest{Kind: "test.other", Args: args}
	}
	bjs, err := s.ten.EnqueueBatch(s.ctx, big)
	require.NoError(t, err)
	require.Len(t, bjs, 5)
	for i := 1; i < len(bjs); i++ {
		prev, _ := strconv.Atoi(bjs[i-1].ID)
		cur, _ := strconv.Atoi(bjs[i].ID)
		require.Greater(t, cur, prev, "ids follow the request's order")
	}
	for i, j := range bjs {
		require.JSONEq(t, string(big[i].Args), string(s.job(j.ID).Args), "job %d keeps its args", i)
	}
}

func scenarioClaimOrder(s *scenario) {
	t := s.t
	p := func(n int) *int { return &n }
	low := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Priority: p(7)})
	high := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Priority: p(1)})
	mid1 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Priority: p(4)})
	mid2 := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Priority: p(4)})
	other := s.enqueue(api.EnqueueRequest{Kind: "test.other"})
	require.Equal(t, "other", other.Queue, "the kind's default queue")
	require.Equal(t, 3, other.Priority, "the kind's default priority")

	cs := s.claim("o", 10, 4)
	require.Equal(t, []string{high.ID, mid1.ID, mid2.ID, low.ID}, []string{cs[0].ID, cs[1].ID, cs[2].ID, cs[3].ID})

	// Several queues merge in claim order; kinds filter.
	x := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Priority: p(5)})
	y := s.enqueue(api.EnqueueRequest{Kind: "test.fast", Priority: p(0)})
	resp, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "o", Limit: 10, Queues: []string{"default", "other"}, Kinds: []string{"test.echo", "test.other"}})
	require.NoError(t, err)
	require.Len(t, resp.Jobs, 2)
	require.Equal(t, other.ID, resp.Jobs[0].ID, "priority 3 before 5")
	require.Equal(t, x.ID, resp.Jobs[1].ID)
	require.Equal(t, "available", s.job(y.ID).State, "a kind outside the filter stays")

	many := make([]string, api.MaxClaimQueues)
	for i := range many {
		many[i] = fmt.Sprintf("q%d", i)
	}
	many[7] = "default"
	resp, err = s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "o", Limit: 5, Queues: many})
	require.NoError(t, err, "a claim over many queues stays within Durable Object SQL limits")
	require.Len(t, resp.Jobs, 1)
	require.Equal(t, y.ID, resp.Jobs[0].ID)
}

func scenarioScheduled(s *scenario) {
	t := s.t
	status, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	at := status.Now.Add(1500 * time.Millisecond)
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
	require.Equal(t, "scheduled", j.State)
	resp, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "s"})
	require.NoError(t, err)
	require.Empty(t, resp.Jobs, "a scheduled job is not claimable before run_at")
	status, err = s.ten.Status(s.ctx)
	require.NoError(t, err)
	require.NotNil(t, status.AlarmAt, "the alarm covers the scheduled job")
	require.False(t, status.AlarmAt.After(at), "the alarm is due no later than run_at")

	s.tg.advance(t, 1600*time.Millisecond)
	eventually(t, s.tg, func() bool { return s.job(j.ID).State == "available" }, "the job becomes available at run_at")
	require.Equal(t, j.ID, s.claim("s", 1, 1)[0].ID)
}

func scenarioLongPoll(s *scenario) {
	t := s.t
	type result struct {
		resp api.ClaimResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		r, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "poller", WaitMs: 30_000})
		done <- result{r, err}
	}()
	time.Sleep(300 * time.Millisecond) // let the claim arrive and be held
	select {
	case r := <-done:
		t.Fatalf("an empty long-poll claim returned early: %+v %v", r.resp, r.err)
	default:
	}
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the held claim was not woken by the enqueue")
	}
	require.NoError(t, r.err)
	require.Len(t, r.resp.Jobs, 1)
	require.Equal(t, j.ID, r.resp.Jobs[0].ID)

	// With no work, the claim answers empty once its wait passes.
	go func() {
		r, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "poller", WaitMs: 1000})
		done <- result{r, err}
	}()
	time.Sleep(300 * time.Millisecond)
	if !s.tg.realTime() {
		s.tg.advance(t, 1100*time.Millisecond)
	}
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the held claim did not end with its wait")
	}
	require.NoError(t, r.err)
	require.Empty(t, r.resp.Jobs)
}

// heldClaim is the answer to a claim sent in the background.
type heldClaim struct {
	resp api.ClaimResponse
	err  error
}

// holdClaim sends a long-poll claim of queue in the background; its
// answer comes on the channel.
func (s *scenario) holdClaim(ctx context.Context, worker, queue string) <-chan heldClaim {
	done := make(chan heldClaim, 1)
	go func() {
		r, err := s.ten.Claim(ctx, api.ClaimRequest{Worker: worker, Queues: []string{queue}, WaitMs: 30_000})
		done <- heldClaim{r, err}
	}()
	return done
}

// A token holds at most api.MaxHeldClaimsPerToken empty long-poll claims
// of a tenant: one more is answered at once, empty, with retry_after_ms,
// and the held ones still take what is enqueued for them.
func scenarioHeldClaimsAreBounded(s *scenario) {
	t := s.t
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "elsewhere"}) // the tenant exists
	held := make([]<-chan heldClaim, api.MaxHeldClaimsPerToken)
	for i := range held {
		held[i] = s.holdClaim(ctx, "holder", "capped")
	}
	time.Sleep(time.Second) // let the claims arrive and be held

	// Held, it would end with the context rather than answer.
	one, stop := context.WithTimeout(s.ctx, 20*time.Second)
	defer stop()
	r, err := s.ten.Claim(one, api.ClaimRequest{Worker: "one-more", Queues: []string{"capped"}, WaitMs: 30_000})
	require.NoError(t, err, "one claim too many is answered at once")
	require.Empty(t, r.Jobs)
	require.Equal(t, api.HeldRetryAfter.Milliseconds(), r.RetryAfterMs)

	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "capped"})
	cases := make([]reflect.SelectCase, 0, len(held)+1)
	for _, c := range held {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
	}
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(time.After(20 * time.Second))})
	i, v, _ := reflect.Select(cases)
	require.Less(t, i, len(held), "the enqueue woke no held claim")
	got := v.Interface().(heldClaim)
	require.NoError(t, got.err)
	require.Len(t, got.resp.Jobs, 1)
	require.Equal(t, j.ID, got.resp.Jobs[0].ID)
}

// A held claim of queue A looks again only when work it may claim becomes
// ready: enqueues to queue B do not run it (the claim's statement traps
// if it runs), an enqueue to A does.
func scenarioHeldClaimWakesForItsQueueOnly(s *scenario) {
	t := s.t
	s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "queue-b"}) // the tenant exists
	done := s.holdClaim(s.ctx, "poller", "queue-a")
	time.Sleep(300 * time.Millisecond) // let the claim arrive and be held
	s.tg.injectFault(t, s.ten.Name(), "UPDATE stile_jobs SET state = 'running'", 1)
	for range 3 {
		s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "queue-b"})
	}
	time.Sleep(300 * time.Millisecond) // a claim woken would run (and trap) now
	select {
	case r := <-done:
		t.Fatalf("enqueues to another queue ran the held claim: %+v %v", r.resp, r.err)
	default:
	}
	s.tg.injectFault(t, s.ten.Name(), "", 0)
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Queue: "queue-a"})
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.Len(t, r.resp.Jobs, 1)
		require.Equal(t, j.ID, r.resp.Jobs[0].ID)
	case <-time.After(20 * time.Second):
		t.Fatal("the enqueue to its queue did not wake the held claim")
	}
}

// A tenant has at most api.MaxQueues distinct queue names: an enqueue or
// a pause naming one more is refused and writes nothing; a known name
// still goes.
func scenarioQueueNamesAreBounded(s *scenario) {
	t := s.t
	reqs := make([]api.EnqueueRequest, api.MaxQueues)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo", Queue: fmt.Sprintf("q%04d", i)}
	}
	_, err := s.ten.EnqueueBatch(s.ctx, reqs)
	require.NoError(t, err)

	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", Queue: "one-more"})
	requireCode(t, err, 409, api.CodeTooManyQueues)
	_, err = s.ten.EnqueueBatch(s.ctx, []api.EnqueueRequest{{Kind: "test.echo", Queue: "q0001"}, {Kind: "test.echo", Queue: "one-more"}})
	requireCode(t, err, 409, api.CodeTooManyQueues)
	_, err = s.ten.PauseQueue(s.ctx, "one-more", true)
	requireCode(t, err, 409, api.CodeTooManyQueues)

	qs, err := s.ten.Queues(s.ctx)
	require.NoError(t, err)
	names := map[string]bool{}
	total := int64(0)
	for _, q := range qs.Queues {
		names[q.Queue] = true
		total += q.Counts["available"]
	}
	require.Len(t, names, api.MaxQueues, "nothing of the refused requests was written")
	require.Equal(t, int64(api.MaxQueues), total)
	require.Empty(t, qs.Paused)

	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo", Queue: "q0999"})
	require.NoError(t, err, "a known queue still takes jobs")
}

// refusal is a request that must be refused: with status and code, and
// a one-line message.
type refusal struct {
	name, method, path, body string
	status                   int
	code                     api.Code
}

// requireRefused sends each request and checks its refusal; it returns
// the messages by case name.
func (s *scenario) requireRefused(cases []refusal) map[string]string {
	t := s.t
	t.Helper()
	msgs := map[string]string{}
	for _, tc := range cases {
		var body []byte
		if tc.body != "" {
			body = []byte(tc.body)
		}
		status, b, err := s.tg.client().Raw(s.ctx, tc.method, tc.path, body, nil)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.status, status, "%s: %.300s", tc.name, b)
		var e api.Error
		require.NoError(t, json.Unmarshal(b, &e), "%s: error body is JSON: %.300s", tc.name, b)
		require.Equal(t, tc.code, e.Code, "%s: %s", tc.name, e.Message)
		require.NotEmpty(t, e.Message, tc.name)
		require.NotContains(t, e.Message, "\n", tc.name)
		require.Less(t, len(e.Message), 400, "%s: one short line", tc.name)
		msgs[tc.name] = e.Message
	}
	return msgs
}

func scenarioBadInput(s *scenario) {
	t := s.t
	first := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	c := s.claim("bad", 1, 1)[0]
	firstAfter := s.job(first.ID)
	tp := s.ten.Name()
	base := "/v1/t/" + tp
	big := `{"kind":"test.echo","args":"` + strings.Repeat("x", api.MaxArgsBytes) + `"}`
	tooMany := `{"jobs":[` + strings.TrimSuffix(strings.Repeat(`{"kind":"test.echo"},`, api.MaxBatchJobs+1), ",") + `]}`
	cases := []refusal{
		{"malformed JSON", "POST", base + "/jobs", `{"kind":`, 400, api.CodeInvalidJSON},
		{"not JSON", "POST", base + "/jobs", `kind=test.echo`, 400, api.CodeInvalidJSON},
		{"empty body", "POST", base + "/jobs", ``, 400, api.CodeInvalidJSON},
		{"unknown field", "POST", base + "/jobs", `{"kind":"test.echo","colour":"red"}`, 400, api.CodeInvalidJSON},
		{"wrong type", "POST", base + "/jobs", `{"kind":"test.echo","priority":"high"}`, 400, api.CodeInvalidJSON},
		{"trailing data", "POST", base + "/jobs", `{"kind":"test.echo"} {}`, 400, api.CodeInvalidJSON},
		{"missing kind", "POST", base + "/jobs", `{"args":{}}`, 400, api.CodeInvalidRequest},
		{"unknown kind", "POST", base + "/jobs", `{"kind":"nope"}`, 400, api.CodeUnknownKind},
		{"invalid args", "POST", base + "/jobs", `{"kind":"test.validated","args":{"m":1}}`, 400, api.CodeInvalidArgs},
		{"args over 1 MiB", "POST", base + "/jobs", big, 400, api.CodeTooLarge},
		{"bad priority", "POST", base + "/jobs", `{"kind":"test.echo","priority":12}`, 400, api.CodeInvalidRequest},
		{"bad queue", "POST", base + "/jobs", `{"kind":"test.echo","queue":"no spaces"}`, 400, api.CodeInvalidRequest},
		{"bad lease", "POST", base + "/jobs", `{"kind":"test.echo","lease_ms":5}`, 400, api.CodeInvalidRequest},
		// A field sent as 0 (or "") is a value, not the default.
		{"lease 0", "POST", base + "/jobs", `{"kind":"test.echo","lease_ms":0}`, 400, api.CodeInvalidRequest},
		{"max_attempts 0", "POST", base + "/jobs", `{"kind":"test.echo","max_attempts":0}`, 400, api.CodeInvalidRequest},
		{"timeout 0", "POST", base + "/jobs", `{"kind":"test.echo","timeout_ms":0}`, 400, api.CodeInvalidRequest},
		{"empty unique key", "POST", base + "/jobs", `{"kind":"test.echo","unique_key":""}`, 400, api.CodeInvalidRequest},
		{"batch job with lease 0", "POST", base + "/jobs/batch", `{"jobs":[{"kind":"test.echo"},{"kind":"test.echo","lease_ms":0}]}`, 400, api.CodeInvalidRequest},
		{"claim limit 0", "POST", base + "/claims", `{"worker":"w","limit":0}`, 400, api.CodeInvalidRequest},
		{"schedule job with lease 0", "PUT", base + "/schedules/zero", `{"cron":"@hourly","job":{"kind":"test.echo","lease_ms":0}}`, 400, api.CodeInvalidRequest},
		{"bad run_at", "POST", base + "/jobs", `{"kind":"test.echo","run_at":"tomorrow"}`, 400, api.CodeInvalidJSON},
		{"batch with one bad job", "POST", base + "/jobs/batch", `{"jobs":[{"kind":"test.echo"},{"kind":"nope"}]}`, 400, api.CodeUnknownKind},
		{"empty batch", "POST", base + "/jobs/batch", `{"jobs":[]}`, 400, api.CodeInvalidRequest},
		{"batch over the limit", "POST", base + "/jobs/batch", tooMany, 400, api.CodeInvalidRequest},
		{"claim without worker", "POST", base + "/claims", `{}`, 400, api.CodeInvalidRequest},
		{"claim over the limit", "POST", base + "/claims", `{"worker":"w","limit":1000}`, 400, api.CodeInvalidRequest},
		{"claim unknown kind", "POST", base + "/claims", `{"worker":"w","kinds":["nope"]}`, 400, api.CodeUnknownKind},
		{"claim waits too long", "POST", base + "/claims", `{"worker":"w","wait_ms":999999}`, 400, api.CodeInvalidRequest},
		{"report without token", "POST", base + "/jobs/" + first.ID + "/report", `{"worker":"bad","attempt":1,"outcome":"completed"}`, 400, api.CodeInvalidRequest},
		{"report bad outcome", "POST", base + "/jobs/" + first.ID + "/report",
			fmt.Sprintf(`{"worker":"bad","attempt":1,"lease_token":%q,"outcome":"maybe"}`, c.LeaseToken), 400, api.CodeInvalidRequest},
		{"report failed with output", "POST", base + "/jobs/" + first.ID + "/report",
			fmt.Sprintf(`{"worker":"bad","attempt":1,"lease_token":%q,"outcome":"failed","output":{}}`, c.LeaseToken), 400, api.CodeInvalidRequest},
		{"report to a non-id", "POST", base + "/jobs/abc/report", `{}`, 404, api.CodeNotFound},
		{"batch report bad id", "POST", base + "/reports", `{"reports":[{"job_id":"x","worker":"w","attempt":1,"lease_token":"t","outcome":"completed"}]}`, 400, api.CodeInvalidRequest},
		{"bad tenant", "POST", "/v1/t/Bad.Tenant/jobs", `{"kind":"test.echo"}`, 400, api.CodeInvalidTenant},
		{"no such route", "GET", base + "/nothing", ``, 404, api.CodeNotFound},
		{"wrong method", "GET", base + "/claims", ``, 405, api.CodeMethodNotAllowed},
		{"not an API path", "GET", "/v2/whatever", ``, 404, api.CodeNotFound},
	}
	msgs := s.requireRefused(cases)
	for name, says := range map[string]string{
		"lease 0":                   "lease_ms 0 is outside 100-86400000",
		"max_attempts 0":            "max_attempts 0 is outside 1-1000",
		"timeout 0":                 "timeout_ms 0 is outside",
		"empty unique key":          "unique_key of 0 bytes is outside 1-256",
		"batch job with lease 0":    "jobs[1]: lease_ms 0 is outside 100-86400000",
		"claim limit 0":             "limit 0 is outside 1-100",
		"schedule job with lease 0": "lease_ms 0 is outside 100-86400000",
	} {
		require.Contains(t, msgs[name], says, name)
	}
	status, _, err := s.tg.client().Raw(s.ctx, "GET", base+"/schedules/zero", nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, status, "the refused schedule was not written")

	// Nothing changed: the claimed job is as it was, and the next job gets
	// the very next id, so no refused request inserted anything.
	require.Equal(t, firstAfter, s.job(first.ID))
	next := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	firstID, _ := strconv.Atoi(first.ID)
	require.Equal(t, strconv.Itoa(firstID+1), next.ID, "no refused request wrote a job")
}

func scenarioAuth(s *scenario) {
	t := s.t
	path := "/v1/t/" + s.ten.Name() + "/jobs"
	body := []byte(`{"kind":"test.echo"}`)
	for _, auth := range []string{"", "Bearer wrong", "Basic " + token, token} {
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		} else {
			h.Set("Authorization", "Bearer ")
		}
		status, b, err := s.tg.client().Raw(s.ctx, "POST", path, body, h)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, status, "auth %q", auth)
		want, _ := json.Marshal(api.Unauthorized)
		require.Equal(t, string(want), string(b), "every host words a 401 alike")
	}
	// The Authorization header twice is refused, whichever comes first:
	// one host must not take the first and another refuse.
	for _, pair := range [][2]string{{"Bearer " + token, "Bearer " + token}, {"Bearer " + token, "Bearer wrong"}, {"Bearer wrong", "Bearer " + token}} {
		h := http.Header{}
		h.Add("Authorization", pair[0])
		h.Add("Authorization", pair[1])
		status, b, err := s.tg.client().Raw(s.ctx, "POST", path, body, h)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, status, "auth %q", pair)
		want, _ := json.Marshal(api.Unauthorized)
		require.Equal(t, string(want), string(b), "every host refuses a repeated Authorization header alike")
	}
	// Nothing was enqueued by the refused requests.
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	require.Equal(t, "1", j.ID)
}

// scenarioRoutesAndPaths: every host answers a path that is no route, and
// a route asked with another method, in the same words, and resolves "."
// and ".." segments (also percent-encoded) as workerd does, by WHATWG URL
// rules, before the route is matched.
func scenarioRoutesAndPaths(s *scenario) {
	t := s.t
	base := "/v1/t/" + s.ten.Name()
	call := func(method, path string) (int, http.Header, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(s.ctx, method, s.tg.client().BaseURL()+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, b
	}
	for _, tc := range []struct{ method, path, resolved string }{
		{"GET", "/nowhere", "/nowhere"},
		{"GET", base + "/nowhere", base + "/nowhere"},
		{"POST", base + "/jobs/1/nowhere", base + "/jobs/1/nowhere"},
	} {
		status, _, b := call(tc.method, tc.path)
		require.Equal(t, http.StatusNotFound, status, "%s %s: %s", tc.method, tc.path, b)
		require.Equal(t, string(api.NoRoute(tc.method, tc.resolved).AppendJSON(nil)), string(b), "%s %s: every host words a 404 alike", tc.method, tc.path)
	}
	// A path with dot or empty segments is refused before anything in the
	// local hosts: resolved (or redirected, as a mux does), it named
	// another route, or another tenant, than it reads. workerd resolves dot
	// segments before the Worker sees the request (as Cloudflare's edge
	// does, by the URL standard): there such a path is answered as the
	// path it resolves to, which is refused in turn if it has an empty
	// segment.
	for _, path := range []string{base + "/jobs/..", base + "/jobs/%2E%2e", base + "/jobs/../status", base + "/./status",
		base + "/jobs/%2e%2E/status", base + "/queues/./../status", "/v1/t/elsewhere/../" + s.ten.Name() + "/status",
		base + "//jobs", "/v1/t//jobs", base + "/jobs/"} {
		for _, method := range []string{"GET", "POST"} {
			status, _, b := call(method, path)
			want := path
			if s.tg.inProcess() == nil {
				want = whatwgResolve(path)
			}
			if api.CheckPath(want) == nil {
				wantStatus, _, wantBody := call(method, want)
				require.Equal(t, wantStatus, status, "%s %s: answered as %s", method, path, want)
				if status >= 300 {
					require.Equal(t, string(wantBody), string(b), "%s %s: answered as %s", method, path, want)
				}
				continue
			}
			require.Equal(t, http.StatusBadRequest, status, "%s %s: %s", method, path, b)
			require.Equal(t, string(api.CheckPath(want).AppendJSON(nil)), string(b), "%s %s: every host refuses it alike", method, path)
		}
	}
	_, err := s.ten.Status(s.ctx)
	require.NoError(t, err)
	page, err := s.tg.client().Tenants(s.ctx, api.TenantsQuery{After: "elsewhere", Limit: 1})
	require.NoError(t, err)
	require.NotEqual(t, []string{"elsewhere"}, tenantNames(page), "no refused path made a tenant")
	page, err = s.tg.client().Tenants(s.ctx, api.TenantsQuery{After: "jobr", Limit: 1})
	require.NoError(t, err)
	require.NotEqual(t, []string{"jobs"}, tenantNames(page), "no refused path made a tenant")
	for _, tc := range []struct{ method, path, allow string }{
		{"GET", base + "/claims", "POST"},
		{"GET", base + "/jobs/batch", "POST"}, // the literal route, not jobs/{id}
		{"POST", base + "/schedules/nightly", "PUT, GET, DELETE"},
	} {
		status, h, b := call(tc.method, tc.path)
		require.Equal(t, http.StatusMethodNotAllowed, status, "%s %s: %s", tc.method, tc.path, b)
		require.Equal(t, tc.allow, h.Get("Allow"), "%s %s: every host sends the Allow header", tc.method, tc.path)
		want := api.Refuse(api.CodeMethodNotAllowed, "%s %s: use %s", tc.method, tc.path, tc.allow)
		require.Equal(t, string(want.AppendJSON(nil)), string(b))
	}
}

func scenarioLargeArgs(s *scenario) {
	t := s.t
	// Exactly the 1 MiB limit is accepted and round-trips, in a row that a
	// Durable Object accepts (its rows stop at about 2 MB).
	str := strings.Repeat("a", api.MaxArgsBytes-2)
	args, _ := json.Marshal(str)
	require.Len(t, args, api.MaxArgsBytes)
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: args})
	c := s.claim("big", 1, 1)[0]
	require.Equal(t, j.ID, c.ID)
	require.Equal(t, string(args), string(c.Args))
	out, _ := json.Marshal(strings.Repeat("b", api.MaxOutputBytes-2))
	_, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "big"), string(out)))
	require.NoError(t, err, "the largest args and output fit one row")
	require.Equal(t, string(out), string(s.job(j.ID).Output))
}

// scenarioPagesStopAtTheirByteBudget fills a tenant with jobs and events
// of the largest sizes the API admits: a page of jobs, a claim, a page of
// events and a stream read each stop at api.MaxAnswerBytes and say where
// to continue (a claim: "more"), and following them reaches every row
// once. Without the budget a page of them ran the module out of memory,
// and a claim did so after committing its leases.
func scenarioPagesStopAtTheirByteBudget(s *scenario) {
	t := s.t
	const jobs, events = 12, 8
	args, _ := json.Marshal(strings.Repeat("a", api.MaxArgsBytes-2))
	for range jobs {
		s.enqueue(api.EnqueueRequest{Kind: "test.echo", Args: args})
	}
	perPage := int(api.MaxAnswerBytes / api.MaxArgsBytes) // less: each job weighs a little more
	seen := map[string]bool{}
	for after, pages := "", 0; ; pages++ {
		page, err := s.ten.List(s.ctx, "", "", "", after, 100)
		require.NoError(t, err)
		require.Less(t, len(page.Jobs), perPage, "page %d", pages)
		for _, j := range page.Jobs {
			require.False(t, seen[j.ID], "job %s listed twice", j.ID)
			seen[j.ID] = true
		}
		if page.Next == "" {
			break
		}
		after = page.Next
	}
	require.Len(t, seen, jobs, "the pages together list every job")

	claimed := map[string]bool{}
	for len(claimed) < jobs {
		resp, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "big", Limit: 25})
		require.NoError(t, err)
		require.NotEmpty(t, resp.Jobs)
		require.Less(t, len(resp.Jobs), perPage)
		for _, c := range resp.Jobs {
			require.False(t, claimed[c.ID], "job %s claimed twice", c.ID)
			claimed[c.ID] = true
			_, err := s.ten.Report(s.ctx, c.ID, completed(claimOf(c, "big"), `"done"`))
			require.NoError(t, err, "every claimed job reached its worker")
		}
		require.Equal(t, len(claimed) < jobs, resp.More, "more is said while jobs are left, after %d", len(claimed))
	}

	data, _ := json.Marshal(strings.Repeat("e", api.MaxEventBytes-2))
	for range events {
		_, err := s.ten.Append(s.ctx, "big-1", api.AppendRequest{Events: []api.NewEvent{{Type: "big.filled", Data: data}}})
		require.NoError(t, err)
	}
	read := 0
	for after := int64(0); ; {
		page, err := s.ten.Events(s.ctx, after, 100)
		require.NoError(t, err)
		require.Less(t, len(page.Events), perPage)
		read += len(page.Events)
		if page.Next == 0 {
			break
		}
		after = page.Next
	}
	require.Equal(t, events, read, "the pages of the log together hold every event")
	read = 0
	for from := int64(1); ; {
		page, err := s.ten.Stream(s.ctx, "big-1", from, 100)
		require.NoError(t, err)
		require.Less(t, len(page.Events), perPage)
		for i, e := range page.Events {
			require.Equal(t, from+int64(i), e.Version)
		}
		read += len(page.Events)
		if page.Next == 0 {
			break
		}
		from = page.Next
	}
	require.Equal(t, events, read, "the pages of the stream together hold every event")
}

// scenarioTrap injects a trap in the middle of a transaction: a batch of
// three reports traps at the second one's write, after the first report's
// write is done. Nothing of the batch is recorded, the instance is
// replaced, and the tenant keeps serving.
func scenarioTrap(s *scenario) {
	t := s.t
	reqs := make([]api.EnqueueRequest, 3)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo"}
	}
	_, err := s.ten.EnqueueBatch(s.ctx, reqs)
	require.NoError(t, err)
	cs := s.claim("t", 3, 3)
	reports := make([]api.BatchReport, len(cs))
	for i, c := range cs {
		reports[i] = api.BatchReport{JobID: c.ID, ReportRequest: completed(claimOf(c, "t"), `"done"`)}
	}
	s.tg.injectFault(t, s.ten.Name(), "UPDATE stile_jobs SET state = ?,", 2)
	_, err = s.ten.ReportBatch(s.ctx, reports)
	requireCode(t, err, http.StatusInternalServerError, api.CodeInternal)
	require.Contains(t, err.Error(), "trapped")
	var refused *api.Error
	require.ErrorAs(t, err, &refused)
	require.True(t, strings.HasPrefix(refused.Message, api.InternalPrefix), "every host words a 500 alike: %v", err)
	if p := s.tg.inProcess(); p != nil {
		require.Equal(t, int64(1), p.manager.Restarts(s.ten.Name()), "the trapped instance was discarded")
	}
	for _, c := range cs {
		j := s.job(c.ID) // the next request gets a fresh instance over intact data
		require.Equal(t, "running", j.State, "the first report's write was rolled back with the rest")
		require.Empty(t, j.Attempts)
		require.Empty(t, j.Output)
	}
	results, err := s.ten.ReportBatch(s.ctx, reports)
	require.NoError(t, err, "the tenant keeps serving")
	for _, r := range results {
		require.Nil(t, r.Error)
		require.Equal(t, "completed", r.State)
	}
}

// scenarioTrapAfterCommit: a request whose transaction committed traps in
// what follows the commit (the route reads the oldest rows, and
// retention's settling reads them again after the commit: the second
// read traps):
// the answer is a 500 that says the request was applied, in every host, and
// what it wrote stands.
func scenarioTrapAfterCommit(s *scenario) {
	t := s.t
	_, err := s.ten.Status(s.ctx) // its migrations, which read the oldest rows too, are done
	require.NoError(t, err)
	s.tg.injectFault(t, s.ten.Name(), "SELECT\n\t\t(SELECT CASE WHEN COUNT(*) < ", 2)
	days := int64(3 * 24 * time.Hour / time.Millisecond)
	_, err = s.ten.SetRetention(s.ctx, map[string]int64{"completed_ms": days})
	requireCode(t, err, http.StatusInternalServerError, api.CodeAnswerLost)
	var lost *api.Error
	require.ErrorAs(t, err, &lost)
	require.True(t, strings.HasPrefix(lost.Message, api.AnswerLostPrefix), "every host words it alike: %v", err)
	require.Contains(t, lost.Message, "trapped")
	r, err := s.ten.Retention(s.ctx)
	require.NoError(t, err)
	require.Equal(t, days, r.Effective.CompletedMs, "the override the request committed stands")
}

// scenarioDirectory: a tenant is in the directory from its creation,
// ready once work is, found by a long-poll for tenants that became ready
// after a change, and idle again once a claim finds nothing; a bad query
// is refused alike in every host.
func scenarioDirectory(s *scenario) {
	t := s.t
	cl := s.tg.client()
	ten := cl.Tenant(s.ten.Name() + "d") // not created yet
	s.ten = ten                          // the helpers below act on it
	find := func(q api.TenantsQuery) (api.TenantInfo, api.TenantsResponse, bool) {
		t.Helper()
		q.After, q.Limit = ten.Name()[:len(ten.Name())-1], 1000
		resp, err := cl.Tenants(s.ctx, q)
		require.NoError(t, err)
		for _, ti := range resp.Tenants {
			if ti.Name == ten.Name() {
				return ti, resp, true
			}
		}
		return api.TenantInfo{}, resp, false
	}
	_, before, found := find(api.TenantsQuery{})
	require.False(t, found, "an unused tenant is in no directory")
	_, err := ten.Create(s.ctx)
	require.NoError(t, err)
	var ti api.TenantInfo
	require.Eventually(t, func() bool { ti, _, found = find(api.TenantsQuery{}); return found }, 10*time.Second, 10*time.Millisecond,
		"its first use notes it")
	require.False(t, ti.Ready)
	require.False(t, ti.FirstSeen.IsZero())

	// A long-poll for tenants that become ready after now.
	_, now, _ := find(api.TenantsQuery{})
	require.GreaterOrEqual(t, now.Seq, before.Seq)
	// Other scenarios' tenants become ready meanwhile (they run in
	// parallel in real time): a poll that answers with theirs is asked
	// again after what it saw.
	polled := make(chan []string, 1)
	go func() {
		var names []string
		after := now.Seq
		for range 20 {
			resp, err := cl.Tenants(s.ctx, api.TenantsQuery{Ready: true, AfterSeq: after, WaitMs: 10_000, Limit: 1000})
			if err != nil {
				break
			}
			for _, r := range resp.Tenants {
				names = append(names, r.Name)
			}
			if slices.Contains(names, ten.Name()) || resp.Seq <= after {
				break
			}
			after = resp.Seq
		}
		polled <- names
	}()
	s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	var names []string
	select {
	case names = <-polled:
	case <-time.After(15 * time.Second):
		t.Fatal("the long-poll never answered")
	}
	require.Contains(t, names, ten.Name(), "the ready tenant wakes the poll")
	ti, _, _ = find(api.TenantsQuery{})
	require.True(t, ti.Ready)

	s.claim("w1", 10, 1)
	s.claim("w1", 10, 0) // finds nothing: idle
	require.Eventually(t, func() bool { ti, _, _ = find(api.TenantsQuery{}); return !ti.Ready }, 10*time.Second, 10*time.Millisecond)
	_, _, found = find(api.TenantsQuery{Ready: true})
	require.False(t, found, "an idle tenant is not listed as ready")

	for q, msg := range map[string]string{
		"limit=0":         `limit "0" is outside 1-1000`,
		"ready=maybe":     `ready "maybe" is not true or false`,
		"wait_ms=-1":      `wait_ms "-1" is outside 0-60000`,
		"bogus=1":         `unknown parameter "bogus": use after, limit, ready, after_seq, wait_ms`,
		"limit=1&limit=2": `query parameter "limit" is given twice`,
	} {
		status, b, err := cl.Raw(s.ctx, "GET", api.TenantsPath+"?"+q, nil, nil)
		require.NoError(t, err)
		require.Equal(t, 400, status, q)
		require.JSONEq(t, `{"code":"invalid_request","message":`+strconv.Quote(msg)+`}`, string(b), q)
	}
}

// scenarioWaitForAJob: GET /jobs/{id}?wait_ms= is held until the job ends
// (the host holds it, the module never waits), and client.Wait returns a
// final job: completed with its output, or dead with a *client.JobFailed.
func scenarioWaitForAJob(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	held := make(chan api.Job, 1)
	go func() {
		_, b, err := s.tg.client().Raw(s.ctx, "GET", "/v1/t/"+s.ten.Name()+"/jobs/"+j.ID+"?wait_ms=30000", nil, nil)
		var got api.Job
		if err == nil {
			json.Unmarshal(b, &got)
		}
		held <- got
	}()
	waited := make(chan error, 1)
	var final api.Job
	go func() {
		var err error
		final, err = s.ten.Wait(s.ctx, j.ID)
		waited <- err
	}()
	select {
	case got := <-held:
		t.Fatalf("the read answered before the job ended: %+v", got)
	case <-waited:
		t.Fatal("Wait returned before the job ended")
	case <-time.After(300 * time.Millisecond): // held, as it should be
	}
	c := s.claim("w1", 1, 1)[0]
	_, err := s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "w1"), `{"done":true}`))
	require.NoError(t, err)
	select {
	case got := <-held:
		require.Equal(t, "completed", got.State, "the held read answered once the job ended, not before")
	case <-time.After(20 * time.Second):
		t.Fatal("the held read never answered")
	}
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Wait never returned")
	}
	require.Equal(t, "completed", final.State)
	require.JSONEq(t, `{"done":true}`, string(final.Output))

	// A job that ends dead: Wait returns it with a *client.JobFailed.
	d := s.enqueue(api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 1})
	c = s.claim("w1", 1, 1)[0]
	_, err = s.ten.Report(s.ctx, d.ID, api.ReportRequest{Claim: claimOf(c, "w1"), Outcome: api.OutcomeFailed, Error: "boom"})
	require.NoError(t, err)
	dead, err := s.ten.Wait(s.ctx, d.ID)
	var failed *client.JobFailed
	require.ErrorAs(t, err, &failed)
	require.Equal(t, "dead", dead.State)
	require.Equal(t, "boom", failed.LastError)

	for q, msg := range map[string]string{
		"wait_ms=-1":    `wait_ms="-1" is outside 0-60000`,
		"wait_ms=60001": `wait_ms="60001" is outside 0-60000`,
		"timeout=5":     `unknown query parameter "timeout": use wait_ms`,
	} {
		status, b, err := s.tg.client().Raw(s.ctx, "GET", "/v1/t/"+s.ten.Name()+"/jobs/"+j.ID+"?"+q, nil, nil)
		require.NoError(t, err)
		require.Equal(t, 400, status, q)
		require.JSONEq(t, `{"code":"invalid_request","message":`+strconv.Quote(msg)+`}`, string(b), q)
	}
}

// scenarioWhyItRanTwice: a job whose first attempt heartbeat once, then
// lost its lease, and whose late report was refused, says so in one line
// of its view (ran_again), with each attempt's heartbeats.
func scenarioWhyItRanTwice(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.fast", LeaseMs: 2000})
	c := s.claim("w1", 1, 1)[0]
	s.tg.advance(t, 500*time.Millisecond)
	_, err := s.ten.Heartbeat(s.ctx, j.ID, claimOf(c, "w1"))
	require.NoError(t, err)
	running := s.job(j.ID)
	require.Equal(t, int64(1), running.Running.Heartbeats)
	require.NotNil(t, running.Running.LastHeartbeatAt)
	require.Empty(t, running.RanAgain, "it ran once so far")

	if s.tg.realTime() {
		time.Sleep(2500 * time.Millisecond)
	} else {
		s.tg.advance(t, 2500*time.Millisecond)
	}
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(c, "w1"), `1`))
	requireCode(t, err, http.StatusConflict, api.CodeLeaseExpired)
	var c2 api.ClaimedJob
	require.Eventually(t, func() bool { // the retry waits out its backoff
		s.tg.advance(t, 250*time.Millisecond)
		r, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "w2", Limit: 1})
		if err == nil && len(r.Jobs) == 1 {
			c2 = r.Jobs[0]
		}
		return c2.ID != ""
	}, 20*time.Second, 50*time.Millisecond)
	_, err = s.ten.Report(s.ctx, j.ID, completed(claimOf(c2, "w2"), `2`))
	require.NoError(t, err)

	got := s.job(j.ID)
	require.Len(t, got.Attempts, 2)
	require.Equal(t, int64(1), got.Attempts[0].Heartbeats, "the attempt keeps its heartbeats")
	require.NotNil(t, got.Attempts[0].LastHeartbeatAt)
	require.Zero(t, got.Attempts[1].Heartbeats)
	require.Regexp(t, `^ran 2 times: attempt 1 \(w1\) lost its lease, noticed by (the alarm|a request); the fence refused its report lease_expired; attempt 2 \(w2\) completed$`, got.RanAgain)
}

// scenarioPauseAQueue: claims take nothing from a paused queue, other
// queues go on, and resuming it wakes a held claim.
func scenarioPauseAQueue(s *scenario) {
	t := s.t
	j := s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
	other := s.enqueue(api.EnqueueRequest{Kind: "test.other"})
	st, err := s.ten.PauseQueue(s.ctx, "default", true)
	require.NoError(t, err)
	require.Equal(t, api.QueueState{Queue: "default", Paused: true}, st)
	r, err := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "w1", Queues: []string{"default", "other"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, r.Jobs, 1, "only the running queue's job")
	require.Equal(t, other.ID, r.Jobs[0].ID)
	q, err := s.ten.Queues(s.ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"default"}, q.Paused)
	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err, "a paused queue still takes jobs")

	held := make(chan api.ClaimResponse, 1)
	go func() {
		r, _ := s.ten.Claim(s.ctx, api.ClaimRequest{Worker: "w2", Limit: 1, WaitMs: 20_000})
		held <- r
	}()
	select {
	case r := <-held:
		t.Fatalf("a claim took from a paused queue: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	_, err = s.ten.PauseQueue(s.ctx, "default", false)
	require.NoError(t, err)
	select {
	case r := <-held:
		require.Len(t, r.Jobs, 1, "resuming woke the held claim")
		require.Equal(t, j.ID, r.Jobs[0].ID)
	case <-time.After(15 * time.Second):
		t.Fatal("the held claim never woke")
	}

	status, b, err := s.tg.client().Raw(s.ctx, "PUT", "/v1/t/"+s.ten.Name()+"/queues/bad%20name", []byte(`{"paused":true}`), nil)
	require.NoError(t, err)
	require.Equal(t, 400, status, string(b))
	status, b, err = s.tg.client().Raw(s.ctx, "PUT", "/v1/t/"+s.ten.Name()+"/queues/default", []byte(`{"paused":"yes"}`), nil)
	require.NoError(t, err)
	require.Equal(t, 400, status, string(b))
	require.Contains(t, string(b), "invalid_json")
	q, err = s.ten.Queues(s.ctx)
	require.NoError(t, err)
	require.Empty(t, q.Paused, "the refused requests changed nothing")
}

// scenarioScopedTokens: every cell of the route × role table (a route the
// role may not call is a 403 naming who may, before anything is read), a
// token for other tenants, and forged, malformed and expired tokens, all
// answered alike in every host.
func scenarioScopedTokens(s *scenario) {
	t := s.t
	tenant := s.ten.Name()
	mint := func(scope string, role api.Role, exp time.Time) string {
		tok, err := stiletoken.Mint(token, stiletoken.Claims{ID: "t-" + string(role), Scope: scope, Role: role, Exp: exp.Unix()})
		require.NoError(t, err)
		return tok
	}
	later := time.Now().Add(time.Hour)
	call := s.callAs
	param := regexp.MustCompile(`\{[a-z]+\}`)
	for _, role := range api.Roles {
		tok := mint("*", role, later)
		for _, r := range api.Routes() {
			path := strings.TrimSuffix("/v1/t/"+tenant+"/"+param.ReplaceAllString(r.Pattern, "1"), "/")
			body := ""
			if r.Method == "POST" || r.Method == "PUT" {
				body = "{}"
			}
			status, out := call(tok, r.Method, path, body)
			if r.Allows(role) {
				require.NotEqual(t, 403, status, "%s may call %s: %s", role, r, out)
				continue
			}
			require.Equal(t, 403, status, "%s may not call %s: %s", role, r, out)
			var e api.Error
			require.NoError(t, json.Unmarshal([]byte(out), &e))
			require.Equal(t, api.CodeForbidden, e.Code)
			article := "a "
			if role == api.RoleOperator || role == api.RoleAdmin {
				article = "an "
			}
			require.Contains(t, e.Message, article+string(role)+" token may not "+r.String()+": that needs admin")
		}
	}
	// A refused write wrote nothing.
	status, _ := call(mint("*", api.RoleReader, later), "POST", "/v1/t/"+tenant+"/jobs", `{"kind":"test.echo"}`)
	require.Equal(t, 403, status)
	l, err := s.ten.List(s.ctx, "", "", "", "", 10)
	require.NoError(t, err)
	require.Empty(t, l.Jobs)
	status, out := call(mint(tenant, api.RoleWriter, later), "POST", "/v1/t/"+tenant+"/jobs", `{"kind":"test.echo"}`)
	require.Equal(t, 201, status, "a writer for this tenant enqueues: %s", out)

	// The audit list keeps the operator actions that committed, with who.
	ops, err := stiletoken.Mint(token, stiletoken.Claims{ID: "oncall-ada", Scope: tenant, Role: api.RoleOperator, Exp: later.Unix()})
	require.NoError(t, err)
	status, out = call(ops, "PUT", "/v1/t/"+tenant+"/queues/mail", `{"paused":true}`)
	require.Equal(t, 200, status, out)
	status, out = call(ops, "GET", "/v1/t/"+tenant+"/audit", "")
	require.Equal(t, 200, status, out)
	var audit api.AuditResponse
	require.NoError(t, json.Unmarshal([]byte(out), &audit))
	var mine []api.AuditEntry
	for _, e := range audit.Entries {
		if e.TokenID == "oncall-ada" {
			mine = append(mine, e)
		}
	}
	require.Len(t, mine, 1, "one operator action by this token; refused and read requests are not listed: %s", out)
	require.Equal(t, api.RoleOperator, mine[0].Role)
	require.Equal(t, "PUT queues/{queue}", mine[0].Route)
	require.Equal(t, "/v1/t/"+tenant+"/queues/mail", mine[0].Path)

	// Other tenants, the directory, and bad tokens.
	status, out = call(mint("other-*", api.RoleAdmin, later), "GET", "/v1/t/"+tenant+"/status", "")
	require.Equal(t, 403, status)
	require.JSONEq(t, `{"code":"forbidden","message":"this token is for other-*, not tenant `+tenant+`"}`, out)
	status, out = call(mint(tenant, api.RoleReader, later), "GET", api.TenantsPath, "")
	require.Equal(t, 403, status)
	require.JSONEq(t, `{"code":"forbidden","message":"this token is for `+tenant+`: listing the tenants needs a token for every tenant (*)"}`, out)
	status, _ = call(mint("*", api.RoleReader, later), "GET", api.TenantsPath, "")
	require.Equal(t, 200, status)

	forged, err := tokenpkgMint("not-the-secret", tenant)
	require.NoError(t, err)
	expired := mint("*", api.RoleAdmin, time.Unix(1_700_000_000, 0))
	// A rotation: the next secret is the admin, and signs scoped tokens.
	status, out = call(nextToken, "GET", "/v1/t/"+tenant+"/status", "")
	require.Equal(t, 200, status, out)
	rotated, err := stiletoken.Mint(nextToken, stiletoken.Claims{ID: "new-1", Scope: tenant, Role: api.RoleReader, Exp: later.Unix()})
	require.NoError(t, err)
	status, out = call(rotated, "GET", "/v1/t/"+tenant+"/status", "")
	require.Equal(t, 200, status, out)
	revoked, err := stiletoken.Mint(token, stiletoken.Claims{ID: revokedID, Scope: "*", Role: api.RoleAdmin, Exp: later.Unix()})
	require.NoError(t, err)
	// A token of the first format (signed with the secret itself), one
	// whose signature is written in the standard base64 alphabet or
	// padded, and one whose kid names no key of this deployment.
	old := stiletoken.OldPrefix + "eyJpZCI6Im9sZCJ9.c2ln"
	padded := rotated + "="
	var std string
	for i := 0; std == ""; i++ {
		tok := mint(tenant, api.RoleReader, later.Add(time.Duration(i)*time.Second))
		dot := strings.LastIndexByte(tok, '.')
		if alt := tok[:dot] + strings.NewReplacer("-", "+", "_", "/").Replace(tok[dot:]); alt != tok {
			std = alt
		}
	}
	unknownKid, err := stiletoken.Mint("another-deployment-0123456789-abcdefgh", stiletoken.Claims{ID: "x", Scope: tenant, Role: api.RoleReader, Exp: later.Unix()})
	require.NoError(t, err)
	for tok, message := range map[string]string{
		revoked:     "the token was revoked",
		forged:      "the token's kid names a key this deployment does not hold: it was signed with another secret, or one rotated out since; mint a new one",
		unknownKid:  "the token's kid names a key this deployment does not hold: it was signed with another secret, or one rotated out since; mint a new one",
		old:         "the token is in the stile1 format, which is no longer accepted: mint a new one with `stile token mint`",
		"stile2.ab": "the token is not a Stile token",
		padded:      "the token is not a Stile token",
		expired:     "the token expired at 2023-11-14T22:13:20Z",
	} {
		status, out := call(tok, "GET", "/v1/t/"+tenant+"/status", "")
		require.Equal(t, 401, status, out)
		require.JSONEq(t, `{"code":"unauthorized","message":`+strconv.Quote(message)+`}`, out, "every host words it alike")
	}
	status, out = call(std, "GET", "/v1/t/"+tenant+"/status", "")
	require.Equal(t, 401, status, "a signature in the standard base64 alphabet: %s", out)
	require.JSONEq(t, `{"code":"unauthorized","message":"the token is not a Stile token"}`, out)
}

func tokenpkgMint(secret, tenant string) (string, error) {
	return stiletoken.Mint(secret, stiletoken.Claims{ID: "forger", Scope: tenant, Role: api.RoleAdmin, Exp: time.Now().Add(time.Hour).Unix()})
}

// callAs sends a request with tok as its bearer token, and returns the
// status and the body.
func (s *scenario) callAs(tok, method, path, body string) (int, string) {
	s.t.Helper()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+tok)
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	status, out, err := s.tg.client().Raw(s.ctx, method, path, b, h)
	require.NoError(s.t, err)
	return status, string(out)
}

// scenarioTenantsExistOnceCreated: a tenant that was never created answers
// 404 tenant_not_found to reads and to writes of roles that may not create
// it, and neither those nor requests refused for other reasons leave a
// trace of it (no directory entry; no file in the local hosts). PUT
// creates it (201, then 200), as does a writer's first enqueue; a DELETE
// never does; a token scoped to a prefix creates at most tenantQuota.
func scenarioTenantsExistOnceCreated(s *scenario) {
	t := s.t
	base := s.ten.Name()
	later := time.Now().Add(time.Hour)
	mint := func(scope string, role api.Role) string {
		tok, err := stiletoken.Mint(token, stiletoken.Claims{ID: "c-" + string(role), Scope: scope, Role: role, Exp: later.Unix()})
		require.NoError(t, err)
		return tok
	}
	call := func(tok, method, path, body string) (int, api.Error) {
		t.Helper()
		status, out := s.callAs(tok, method, path, body)
		var e api.Error
		if status >= 300 {
			require.NoError(t, json.Unmarshal([]byte(out), &e), "every refusal is JSON: %s", out)
		}
		return status, e
	}
	listed := func(name string) bool {
		t.Helper()
		page, err := s.tg.client().Tenants(s.ctx, api.TenantsQuery{After: base, Limit: api.MaxTenantsPage})
		require.NoError(t, err)
		for _, x := range page.Tenants {
			if x.Name == name {
				return true
			}
		}
		return false
	}
	exists := func(name string) bool {
		if p := s.tg.inProcess(); p != nil {
			return p.manager.Exists(name)
		}
		return listed(name)
	}
	ghost := base + "-ghost"
	g := "/v1/t/" + ghost
	admin := ""
	for _, c := range []struct {
		tok, method, path, body string
		status                  int
		code                    api.Code
	}{
		{admin, "GET", g + "/jobs", "", 404, api.CodeTenantNotFound},
		{admin, "GET", g + "/status", "", 404, api.CodeTenantNotFound},
		{admin, "GET", g + "/jobs/1", "", 404, api.CodeTenantNotFound},
		{admin, "GET", g + "/export", "", 404, api.CodeTenantNotFound},
		{admin, "DELETE", g + "?confirm=" + ghost, "", 404, api.CodeTenantNotFound},
		{admin, "DELETE", g + "/jobs/1", "", 404, api.CodeTenantNotFound},
		{mint("*", api.RoleReader), "GET", g + "/queues", "", 404, api.CodeTenantNotFound},
		{mint(ghost, api.RoleWorker), "POST", g + "/claims", `{"worker":"w"}`, 404, api.CodeTenantNotFound},
		{mint("*", api.RoleReader), "POST", g + "/jobs", `{"kind":"test.echo"}`, 404, api.CodeTenantNotFound},
		{mint("*", api.RoleReader), "PUT", g, "", 404, api.CodeTenantNotFound},
		{mint("*", api.RoleOperator), "POST", g + "/jobs", `{"kind":"test.echo"}`, 403, api.CodeForbidden},
		{admin, "POST", g + "/jobs", `{"kind":`, 400, api.CodeInvalidJSON},
		{admin, "POST", g + "/jobs", `{"kind":"no.such.kind"}`, 400, api.CodeUnknownKind},
		{admin, "PATCH", g + "/jobs", "", 404, api.CodeTenantNotFound},
		{admin, "GET", g + "/jobs/batch", "", 404, api.CodeTenantNotFound},
		{admin, "PUT", g + "/jobs", "{}", 405, api.CodeMethodNotAllowed},
		{admin, "POST", g + "/nowhere", "{}", 404, api.CodeNotFound},
		{admin, "GET", g + "/jobs?limit=x", "", 404, api.CodeTenantNotFound},
	} {
		tok := c.tok
		if tok == "" {
			tok = token
		}
		status, e := call(tok, c.method, c.path, c.body)
		require.Equal(t, c.status, status, "%s %s: %s", c.method, c.path, e.Message)
		require.Equal(t, c.code, e.Code, "%s %s: %s", c.method, c.path, e.Message)
		if c.code == api.CodeTenantNotFound {
			require.Contains(t, e.Message, "PUT /v1/t/"+ghost, "the refusal says how to create it")
		}
		require.False(t, exists(ghost), "%s %s left the tenant behind", c.method, c.path)
	}
	require.False(t, listed(ghost), "nothing of the refusals reached the directory")

	// PUT creates, once.
	status, _ := call(token, "PUT", g, "")
	require.Equal(t, 201, status)
	status, _ = call(token, "PUT", g, "")
	require.Equal(t, 200, status, "a second PUT finds it")
	status, e := call(token, "GET", g+"/jobs", "")
	require.Equal(t, 200, status, e.Message)

	// A writer's first write creates the tenant it names.
	w := base + "-w"
	status, e = call(mint(w, api.RoleWriter), "POST", "/v1/t/"+w+"/jobs", `{"kind":"test.echo"}`)
	require.Equal(t, 201, status, e.Message)
	require.True(t, exists(w))

	// A prefix token creates at most tenantQuota tenants of its prefix;
	// those it made still take its writes.
	prefix := base + "-q"
	pt := mint(prefix+"*", api.RoleWriter)
	for i := range tenantQuota {
		name := prefix + strconv.Itoa(i)
		status, e = call(pt, "POST", "/v1/t/"+name+"/jobs", `{"kind":"test.echo"}`)
		require.Equal(t, 201, status, e.Message)
		eventually(t, s.tg, func() bool { return listed(name) }, "the new tenant reaches the directory")
	}
	over := prefix + strconv.Itoa(tenantQuota)
	status, e = call(pt, "POST", "/v1/t/"+over+"/jobs", `{"kind":"test.echo"}`)
	require.Equal(t, 403, status, e.Message)
	require.Equal(t, api.CodeTenantQuota, e.Code)
	require.False(t, exists(over))
	status, e = call(pt, "POST", "/v1/t/"+prefix+"0/jobs", `{"kind":"test.echo"}`)
	require.Equal(t, 201, status, "a tenant of the quota takes writes: %s", e.Message)
}

// whatwgResolve is the path workerd's Worker sees for a path as sent: "."
// and ".." segments (also as %2e) resolved by the URL standard.
func whatwgResolve(escaped string) string {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	out := segs[:0]
	for i, seg := range segs {
		last := i == len(segs)-1
		switch strings.ToLower(seg) {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case ".", "%2e":
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "") // a dot segment at the end leaves a trailing slash
		}
	}
	return "/" + strings.Join(out, "/")
}
