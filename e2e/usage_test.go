package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// scenarioUsageAndBudget: every host counts a tenant's requests and the
// rows they cost, by UTC day, and GET /usage says so at once (today's
// figures include what is not recorded yet). A budget refuses new work
// past it with 429 budget_exceeded and Retry-After, writing nothing,
// while work already started (claims, heartbeats, reports) goes on; bad
// budgets and bad ranges are refused and change nothing.
func scenarioUsageAndBudget(s *scenario) {
	t := s.t
	// The scenario's tenant was created: one request. Three enqueues, a
	// claim and a report are five more.
	var ids []string
	for range 3 {
		ids = append(ids, s.enqueue(api.EnqueueRequest{Kind: "test.echo"}).ID)
	}
	claimed := s.claim("w1", 1, 1)
	_, err := s.ten.Report(s.ctx, claimed[0].ID, completed(claimOf(claimed[0], "w1"), `"ok"`))
	require.NoError(t, err)
	// A request refused before it reaches the tenant (a wrong token) is
	// not its use: anyone who knows its name could spend its budget.
	status, _ := s.callAs("not-a-token", "POST", api.RouteEnqueue.Path(s.ten.Name()), `{"kind":"test.echo"}`)
	require.Equal(t, http.StatusUnauthorized, status)

	u, err := s.ten.Usage(s.ctx, "", "")
	require.NoError(t, err)
	today := s.now().UTC().Format("2006-01-02")
	require.Equal(t, today, u.To)
	require.Len(t, u.Days, 1, "%+v", u)
	day := u.Days[0]
	require.Equal(t, today, day.Day)
	require.Equal(t, int64(7), day.Requests, "create, three enqueues, a claim, a report and this read, not the refused one: %+v", day)
	require.Positive(t, day.RowsWritten, "what the enqueues, the claim and the report wrote")
	require.Positive(t, day.RowsRead)
	require.Zero(t, day.Pushes, "no executor: nothing pushed")
	require.Equal(t, day.Usage, u.Total)
	require.Equal(t, api.Budget{}, u.Budget, "the test module sets no budget")
	require.Empty(t, u.Refusing)

	// A budget of ten requests: the PUT is the eighth, two enqueues fit.
	b, err := s.ten.SetBudget(s.ctx, api.Budget{RequestsPerDay: 10})
	require.NoError(t, err)
	require.Equal(t, api.BudgetResponse{Effective: api.Budget{RequestsPerDay: 10}, Overridden: true}, b)
	ids = append(ids, s.enqueue(api.EnqueueRequest{Kind: "test.echo"}).ID, s.enqueue(api.EnqueueRequest{Kind: "test.echo"}).ID)

	status, body, retryAfter := s.raw("POST", api.RouteEnqueue.Path(s.ten.Name()), `{"kind":"test.echo"}`)
	require.Equal(t, 429, status, body)
	var e api.Error
	require.NoError(t, json.Unmarshal([]byte(body), &e))
	require.Equal(t, api.CodeBudgetExceeded, e.Code)
	require.Contains(t, e.Message, "past its daily budget (requests_per_day 10; 11 used today)")
	require.Contains(t, e.Message, "PUT /v1/t/"+s.ten.Name()+"/budget raises it")
	// The refusal lasts until the end of the request's UTC day.
	now := s.now()
	dayEnd := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	require.Contains(t, e.Message, "new work is refused until "+dayEnd.Format(time.RFC3339))
	secs, err := strconv.Atoi(retryAfter)
	require.NoError(t, err, "Retry-After %q", retryAfter)
	require.InDelta(t, dayEnd.Sub(now).Seconds(), float64(secs), 120, "Retry-After %d: seconds until the UTC day ends", secs)
	s.requireRefused([]refusal{
		{"enqueue many", "POST", api.RouteEnqueueMany.Path(s.ten.Name()), `{"jobs":[{"kind":"test.echo"}]}`, 429, api.CodeBudgetExceeded},
		{"command", "POST", api.RouteCommand.Path(s.ten.Name()), `{"id":"c1","aggregate":"payment","aggregate_id":"p1","type":"Create","data":{"amount":5}}`, 429, api.CodeBudgetExceeded},
		{"append", "POST", api.RouteAppend.Path(s.ten.Name(), "log-1"), `{"events":[{"type":"noted","data":{}}]}`, 429, api.CodeBudgetExceeded},
	})
	page, err := s.ten.List(s.ctx, "", "", "", "", 100)
	require.NoError(t, err)
	require.Len(t, page.Jobs, len(ids), "a refused enqueue wrote nothing")
	events, err := s.ten.Events(s.ctx, 0, 10)
	require.NoError(t, err)
	require.Empty(t, events.Events, "a refused command or append wrote nothing")

	// Work already started goes on past the budget.
	claimed = s.claim("w1", 1, 1)
	_, err = s.ten.Heartbeat(s.ctx, claimed[0].ID, claimOf(claimed[0], "w1"))
	require.NoError(t, err)
	_, err = s.ten.Report(s.ctx, claimed[0].ID, completed(claimOf(claimed[0], "w1"), `"ok"`))
	require.NoError(t, err)

	u, err = s.ten.Usage(s.ctx, "", "")
	require.NoError(t, err)
	require.Equal(t, "requests_per_day 10; 20 used today", u.Refusing, "%+v", u)
	require.NotNil(t, u.RefusingUntil)

	// Bad budgets and ranges are refused, and change nothing.
	budget, usage := api.RoutePutBudget.Path(s.ten.Name()), api.RouteUsage.Path(s.ten.Name())
	s.requireRefused([]refusal{
		{"negative budget", "PUT", budget, `{"requests_per_day":-1,"rows_written_per_day":0}`, 400, api.CodeInvalidRequest},
		{"torn budget", "PUT", budget, `{"requests_per_day":5`, 400, api.CodeInvalidJSON},
		{"unknown field", "PUT", budget, `{"requests":5}`, 400, api.CodeInvalidJSON},
		{"no such day", "GET", usage + "?from=2026-13-01", "", 400, api.CodeInvalidRequest},
		{"from after to", "GET", usage + "?from=2026-02-01&to=2026-01-01", "", 400, api.CodeInvalidRequest},
		{"past 400 days", "GET", usage + "?from=2024-01-01&to=2026-01-01", "", 400, api.CodeInvalidRequest},
		{"unknown parameter", "GET", usage + "?days=3", "", 400, api.CodeInvalidRequest},
	})
	u, err = s.ten.Usage(s.ctx, "", "")
	require.NoError(t, err)
	require.Equal(t, api.Budget{RequestsPerDay: 10}, u.Budget, "a refused PUT changed nothing")

	// A budget of rows written, and then none.
	_, err = s.ten.SetBudget(s.ctx, api.Budget{RowsWrittenPerDay: 1})
	require.NoError(t, err)
	_, err = s.ten.Enqueue(s.ctx, api.EnqueueRequest{Kind: "test.echo"})
	requireCode(t, err, 429, api.CodeBudgetExceeded)
	require.Contains(t, err.Error(), "rows_written_per_day 1")
	b, err = s.ten.ClearBudget(s.ctx)
	require.NoError(t, err)
	require.Equal(t, api.BudgetResponse{}, b)
	s.enqueue(api.EnqueueRequest{Kind: "test.echo"})
}

// raw sends a request as the admin and returns the status, the body and
// the Retry-After header (client.Raw returns no headers).
func (s *scenario) raw(method, path, body string) (int, string, string) {
	s.t.Helper()
	var r *http.Request
	var err error
	if body != "" {
		r, err = http.NewRequestWithContext(s.ctx, method, s.tg.client().BaseURL()+path, strings.NewReader(body))
	} else {
		r, err = http.NewRequestWithContext(s.ctx, method, s.tg.client().BaseURL()+path, nil)
	}
	require.NoError(s.t, err)
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(r)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, string(b), resp.Header.Get("Retry-After")
}

// TestWorkerdRecordsUsageByItsAlarm: in workerd the host's count goes
// with the object's instance, which may leave memory 10 s after its last
// request, so the module sets an alarm 5 s after its first unrecorded
// request, and that alarm records it and tells the directory, with no
// request of the tenant's own.
func TestWorkerdRecordsUsageByItsAlarm(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	ctx := context.Background()
	ten := w.client().Tenant("usage-by-alarm-" + strconv.FormatInt(tenantSeq.Add(1), 10)) // the workerd is shared
	_, err := ten.Create(ctx)
	require.NoError(t, err)
	for range 2 {
		_, err = ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
		require.NoError(t, err)
	}
	var seen *api.UsageDay
	require.Eventually(t, func() bool {
		page, err := w.client().Tenants(ctx, api.TenantsQuery{Limit: api.MaxTenantsPage})
		require.NoError(t, err)
		for _, ti := range page.Tenants {
			if ti.Name == ten.Name() && ti.Usage != nil {
				seen = ti.Usage
				return true
			}
		}
		return false
	}, 60*time.Second, 250*time.Millisecond, "the alarm records the usage and tells the directory")
	require.Equal(t, time.Now().UTC().Format("2006-01-02"), seen.Day)
	require.Equal(t, int64(3), seen.Requests, "the creation and two enqueues: %+v", seen)
	require.Equal(t, int64(1), seen.Alarms, "the alarm that recorded them counts itself")
	require.Positive(t, seen.RowsWritten)

	u, err := ten.Usage(ctx, "", "")
	require.NoError(t, err)
	require.Equal(t, int64(4), u.Total.Requests, "what was recorded, and this read, each once: %+v", u)
}
