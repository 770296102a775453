package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host/metrics"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/token"
)

func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s with %v", name, labels)
	return 0
}

// histogram is the histogram of name whose kind label is kind.
func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name, kind string) *dto.Histogram {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if l.GetName() == "kind" && l.GetValue() == kind {
				return m.Histogram
			}
		}
	}
	t.Fatalf("no %s of kind %q", name, kind)
	return nil
}

// scrape reads the metrics page with the token.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err, "the exporter's own parser reads the page")
	return fams
}

func TestMetricsCountRequestsOutcomesAndTenantsState(t *testing.T) {
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	mx := metrics.New(h.Manager())
	srv, err := server.New(h.Manager(), "tok", server.WithObserver(mx))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/metrics", mx.Handler("tok"))
	mux.Handle("/", srv)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := context.Background()
	acme := client.New(ts.URL, "tok", nil).Tenant("acme")
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	_, err = acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	c, err := acme.Claim(ctx, api.ClaimRequest{Worker: "w1", Limit: 1})
	require.NoError(t, err)
	claim := api.Claim{Worker: "w1", Attempt: c.Jobs[0].Attempt, LeaseToken: c.Jobs[0].LeaseToken}
	h.Advance(1500 * time.Millisecond) // the attempt runs 1.5 s
	rep, err := acme.Report(ctx, j.ID, api.ReportRequest{Claim: claim, Outcome: api.OutcomeCompleted})
	require.NoError(t, err)
	require.Equal(t, "test.echo", rep.Kind)
	require.Equal(t, int64(1500), rep.AttemptMs, "from its claim to its report")
	_, err = acme.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "w9", Attempt: 1, LeaseToken: "x"}, Outcome: api.OutcomeCompleted})
	require.Error(t, err)
	// A rate key of another tenant (through the harness's own server: its
	// requests are not the ones counted below) lets two of three jobs
	// start in its hour; the third waits.
	globex := h.Tenant("globex")
	_, err = globex.SetRate(ctx, "api", 2, time.Hour)
	require.NoError(t, err)
	for range 3 {
		_, err := globex.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", RateKey: "api"})
		require.NoError(t, err)
	}
	for _, started := range []int{2, 0} {
		c, err := globex.Claim(ctx, api.ClaimRequest{Worker: "w2", Limit: 10})
		require.NoError(t, err)
		require.Len(t, c.Jobs, started)
	}
	h.Advance(0)

	req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode, "the metrics need the token")
	// They hold every tenant's figures: a scoped token, even an admin's
	// of every tenant, is not the secret and is refused.
	for _, c := range []token.Claims{{ID: "a", Scope: "*", Role: api.RoleAdmin}, {ID: "o", Scope: "globex", Role: api.RoleOperator}} {
		c.Exp = time.Now().Add(time.Hour).Unix()
		tok, err := token.Mint("tok", c)
		require.NoError(t, err)
		_, err = client.New(ts.URL, tok, nil).Tenant("globex").Status(ctx)
		require.NoError(t, err, "the token opens the API")
		req, _ := http.NewRequest("GET", ts.URL+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, 401, resp.StatusCode, "a %s token of %s", c.Role, c.Scope)
	}
	fams := scrape(t, ts.URL)

	require.Equal(t, 2.0, value(t, fams, "stile_requests_total", map[string]string{"route": "POST jobs", "status": "201"}))
	require.Equal(t, 1.0, value(t, fams, "stile_requests_total", map[string]string{"route": "POST jobs/{id}/report", "status": "409"}))
	require.Equal(t, 1.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": "test.echo", "state": "completed"}))
	require.Equal(t, 1.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": "", "state": "refused:other_worker"}),
		"a refused report has no kind: the refusal does not say it")
	attempts := histogram(t, fams, "stile_job_attempt_duration_seconds", "test.echo")
	require.Equal(t, uint64(1), attempts.GetSampleCount())
	require.InDelta(t, 1.5, attempts.GetSampleSum(), 1e-9)
	require.Equal(t, 1.0, value(t, fams, "stile_queue_jobs", map[string]string{"tenant": "acme", "queue": "default", "state": "available"}))
	require.GreaterOrEqual(t, value(t, fams, "stile_queue_oldest_ready_seconds", map[string]string{"tenant": "acme", "queue": "default"}), 0.0)
	require.Equal(t, 0.0, value(t, fams, "stile_projection_lag_events", map[string]string{"tenant": "acme", "projection": "notes"}))
	require.Equal(t, 0.0, value(t, fams, "stile_reaction_lag_events", map[string]string{"tenant": "acme", "reaction": testapp.RefundPolicy}))
	// The tenant's usage: five requests (the scrape's own reads of its
	// queues are the host's, not the tenant's), with their rows and time.
	acmeOnly := map[string]string{"tenant": "acme"}
	require.Equal(t, 5.0, value(t, fams, "stile_tenant_requests_total", acmeOnly))
	require.Equal(t, 0.0, value(t, fams, "stile_tenant_alarms_total", acmeOnly))
	require.Positive(t, value(t, fams, "stile_tenant_rows_written_total", acmeOnly))
	require.Greater(t, value(t, fams, "stile_tenant_rows_read_total", acmeOnly), value(t, fams, "stile_tenant_rows_written_total", acmeOnly))
	require.Positive(t, value(t, fams, "stile_tenant_module_seconds_total", acmeOnly))
	require.Equal(t, 5.0, value(t, fams, "stile_request_duration_seconds", map[string]string{"route": "POST jobs/{id}/report"})+
		value(t, fams, "stile_request_duration_seconds", map[string]string{"route": "POST jobs"})+
		value(t, fams, "stile_request_duration_seconds", map[string]string{"route": "POST claims"}), "every request is timed")

	api2 := map[string]string{"tenant": "globex", "key": "api"}
	require.Equal(t, 2.0, value(t, fams, "stile_rate_starts_total", api2))
	require.Equal(t, 1.0, value(t, fams, "stile_rate_limited_total", api2), "the third job waited")
	require.Equal(t, 2.0, value(t, fams, "stile_rate_window_starts", api2))
	require.Equal(t, 2.0, value(t, fams, "stile_rate_limit_starts", api2))
	// Once the starts left the window (an hour, and the slot of
	// 3.6 s a start is counted at the end of), it is empty; the counters
	// stay.
	h.Advance(time.Hour + 3600*time.Millisecond)
	fams = scrape(t, ts.URL)
	require.Equal(t, 0.0, value(t, fams, "stile_rate_window_starts", api2))
	require.Equal(t, 2.0, value(t, fams, "stile_rate_starts_total", api2))
	require.Equal(t, 1.0, value(t, fams, "stile_rate_limited_total", api2))
	c, err = globex.Claim(ctx, api.ClaimRequest{Worker: "w2", Limit: 10})
	require.NoError(t, err)
	require.Len(t, c.Jobs, 1, "the waiting job starts")
	fams = scrape(t, ts.URL)
	require.Equal(t, 3.0, value(t, fams, "stile_rate_starts_total", api2))
	require.Equal(t, 1.0, value(t, fams, "stile_rate_window_starts", api2))
	require.Len(t, fams["stile_rate_starts_total"].Metric, 1, "a tenant without rate keys has no series")
}

// TestReportsLabelAtMostMaxKinds: the first MaxKinds kinds reported are
// labels of their own; every later one is counted as "other", so a module
// that names kinds per job cannot grow the page without bound.
func TestReportsLabelAtMostMaxKinds(t *testing.T) {
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	mx := metrics.New(h.Manager())
	ts := httptest.NewServer(mx.Handler("tok"))
	defer ts.Close()
	report := api.RouteReport.Method + " " + api.RouteReport.Pattern
	for i := range metrics.MaxKinds + 20 {
		body := fmt.Sprintf(`{"job_id":"%d","state":"completed","attempt":1,"kind":"kind.%d","attempt_ms":250}`, i, i)
		mx.Observe(report, 200, time.Millisecond, []byte(body))
	}
	// A kind seen before the cap keeps its label; the batch route counts
	// the same way.
	batch, err := json.Marshal(api.BatchReportResponse{Results: []api.BatchReportResult{
		{JobID: "1", State: "dead", Kind: "kind.0", AttemptMs: 1000}, {JobID: "2", State: "dead", Kind: "kind.new", AttemptMs: 1000}}})
	require.NoError(t, err)
	mx.Observe(api.RouteReportMany.Method+" "+api.RouteReportMany.Pattern, 200, time.Millisecond, batch)

	fams := scrape(t, ts.URL)
	kinds := map[string]bool{}
	for _, m := range fams["stile_job_reports_total"].Metric {
		for _, l := range m.Label {
			if l.GetName() == "kind" {
				kinds[l.GetValue()] = true
			}
		}
	}
	require.Len(t, kinds, metrics.MaxKinds+1, "MaxKinds kinds and other")
	require.True(t, kinds["kind.99"])
	require.False(t, kinds["kind.100"], "the 101st kind is other")
	require.Equal(t, 1.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": "kind.0", "state": "completed"}))
	require.Equal(t, 1.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": "kind.0", "state": "dead"}))
	require.Equal(t, 20.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": metrics.OtherKind, "state": "completed"}))
	require.Equal(t, 1.0, value(t, fams, "stile_job_reports_total", map[string]string{"kind": metrics.OtherKind, "state": "dead"}))
	other := histogram(t, fams, "stile_job_attempt_duration_seconds", metrics.OtherKind)
	require.Equal(t, uint64(21), other.GetSampleCount())
	require.InDelta(t, 20*0.25+1, other.GetSampleSum(), 1e-9)
	require.Len(t, fams["stile_job_attempt_duration_seconds"].Metric, metrics.MaxKinds+1)
}
