// Package metrics exposes a Go host's tenants as Prometheus metrics:
// requests by route and status with their duration, job outcomes and
// attempt durations by kind as workers report them, and, read from each
// tenant when scraped, queue depth by state, the age of each queue's
// oldest ready job, rate keys' starts and waits, and the lag of reactions
// and projections. `stile dev` serves them at /metrics (behind the
// deployment's secret). It is a package of its own so that nothing else
// links the Prometheus client.
package metrics

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/internal/bearer"
)

// MaxKinds bounds the job kinds the report metrics label: past this many
// distinct kinds (a module registering kinds by the thousand, or names
// made up per job), a new kind is counted as OtherKind.
const MaxKinds = api.MaxMetricKinds

// OtherKind labels the reports of every kind past the first MaxKinds.
const OtherKind = api.OtherMetricKind

// Metrics are a host's metrics, in a registry of their own.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	outcomes *prometheus.CounterVec
	attempts *prometheus.HistogramVec

	mu    sync.Mutex
	kinds map[string]bool // the kinds labelled so far, at most MaxKinds
}

// New returns the metrics of m's tenants (those in its directory).
func New(m *host.Manager) *Metrics {
	x := &Metrics{reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stile_requests_total",
			Help: "API requests by route pattern and status."}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stile_request_duration_seconds",
			Help: "API request durations by route pattern (held claims included).", Buckets: prometheus.DefBuckets}, []string{"route"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stile_job_reports_total",
			Help: "Job reports by kind and the state they left the job in (completed, retryable, dead, …), and refused ones by code (no kind)."},
			[]string{"kind", "state"}),
		// From 10 ms to about 45 minutes: handlers run for a lease's
		// length, which can be long.
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stile_job_attempt_duration_seconds",
			Help:    "How long reported attempts ran, from their claim to their report, by kind (by the tenant's clock).",
			Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"kind"}),
		kinds: map[string]bool{},
	}
	x.reg.MustRegister(x.requests, x.duration, x.outcomes, x.attempts, &tenants{m: m})
	return x
}

// Observe records one request: the server's observer (server.WithObserver).
func (x *Metrics) Observe(route string, status int, d time.Duration, body []byte) {
	if route == "" {
		route = "(none)"
	}
	x.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	x.duration.WithLabelValues(route).Observe(d.Seconds())
	switch route {
	case api.RouteReport.Method + " " + api.RouteReport.Pattern:
		// The answer, or the refusal's error (its code, no kind).
		var r struct {
			State     string   `json:"state"`
			Kind      string   `json:"kind"`
			AttemptMs int64    `json:"attempt_ms"`
			Code      api.Code `json:"code"`
		}
		if json.Unmarshal(body, &r) == nil {
			x.outcome(r.Kind, r.State, r.Code, r.AttemptMs)
		}
	case api.RouteReportMany.Method + " " + api.RouteReportMany.Pattern:
		var r api.BatchReportResponse
		if json.Unmarshal(body, &r) == nil {
			for _, res := range r.Results {
				var code api.Code
				if res.Error != nil {
					code = res.Error.Code
				}
				x.outcome(res.Kind, res.State, code, res.AttemptMs)
			}
		}
	}
}

func (x *Metrics) outcome(kind, state string, code api.Code, attemptMs int64) {
	switch {
	case code != "":
		x.outcomes.WithLabelValues("", "refused:"+string(code)).Inc()
	case state != "":
		kind = x.kind(kind)
		x.outcomes.WithLabelValues(kind, state).Inc()
		if attemptMs > 0 {
			x.attempts.WithLabelValues(kind).Observe(float64(attemptMs) / 1e3)
		}
	}
}

// kind is the label of a job kind: itself for the first MaxKinds kinds
// seen, OtherKind for any later one.
func (x *Metrics) kind(k string) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.kinds[k] {
		return k
	}
	if len(x.kinds) >= MaxKinds {
		return OtherKind
	}
	x.kinds[k] = true
	return k
}

// Handler serves the metrics in Prometheus's text format to a caller
// with the bearer token: the deployment's secret itself. A scoped token
// (stile token mint), of any role or tenant, is not it and is refused:
// the page holds every tenant's figures.
func (x *Metrics) Handler(token string) http.Handler {
	h := promhttp.HandlerFor(x.reg, promhttp.HandlerOpts{})
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearer.Matches(r, want) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write(api.Unauthorized.AppendJSON(nil))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// tenants reads each tenant's state when scraped.
type tenants struct{ m *host.Manager }

var (
	depthDesc = prometheus.NewDesc("stile_queue_jobs", "Unfinished jobs by tenant, queue and state.",
		[]string{"tenant", "queue", "state"}, nil)
	oldestDesc = prometheus.NewDesc("stile_queue_oldest_ready_seconds", "How long the oldest ready job of a queue has waited.",
		[]string{"tenant", "queue"}, nil)
	reactionDesc = prometheus.NewDesc("stile_reaction_lag_events", "Events a reaction has still to settle.",
		[]string{"tenant", "reaction"}, nil)
	openDesc = prometheus.NewDesc("stile_reaction_open_deliveries", "Deliveries of a reaction claimed or failed and not settled.",
		[]string{"tenant", "reaction"}, nil)
	projectionDesc = prometheus.NewDesc("stile_projection_lag_events", "Events a projection's live generation has still to apply.",
		[]string{"tenant", "projection"}, nil)
	stalledDesc = prometheus.NewDesc("stile_projection_stalled", "1 if a projection's live generation is stalled on an event.",
		[]string{"tenant", "projection"}, nil)

	// A rate key's figures, as the tenant keeps them (GET
	// /v1/t/{tenant}/rates): its counts outlive the host's restarts.
	rateStartsDesc = prometheus.NewDesc("stile_rate_starts_total", "Jobs a rate key let start (each claim of one is a start).",
		[]string{"tenant", "key"}, nil)
	rateLimitedDesc = prometheus.NewDesc("stile_rate_limited_total", "Times a rate key's jobs had to wait for room.",
		[]string{"tenant", "key"}, nil)
	rateWindowDesc = prometheus.NewDesc("stile_rate_window_starts", "Starts of a rate key in the window that ends now.",
		[]string{"tenant", "key"}, nil)
	rateLimitDesc = prometheus.NewDesc("stile_rate_limit_starts", "Starts a rate key allows in any window of its period.",
		[]string{"tenant", "key"}, nil)

	// A tenant's usage as this host counted it since it started (what
	// the tenant records by day: GET /v1/t/{tenant}/usage).
	tenantRequestsDesc = prometheus.NewDesc("stile_tenant_requests_total", "Requests a tenant's object served (a held claim is one).",
		[]string{"tenant"}, nil)
	tenantAlarmsDesc = prometheus.NewDesc("stile_tenant_alarms_total", "Alarms a tenant's object ran.",
		[]string{"tenant"}, nil)
	tenantRowsReadDesc = prometheus.NewDesc("stile_tenant_rows_read_total", "Storage rows a tenant's calls read (rows returned and changed).",
		[]string{"tenant"}, nil)
	tenantRowsWrittenDesc = prometheus.NewDesc("stile_tenant_rows_written_total", "Storage rows a tenant's calls wrote (rows changed, by triggers too).",
		[]string{"tenant"}, nil)
	tenantModuleDesc = prometheus.NewDesc("stile_tenant_module_seconds_total", "Time a tenant's calls spent in its module.",
		[]string{"tenant"}, nil)
)

func (c *tenants) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{depthDesc, oldestDesc, reactionDesc, openDesc, projectionDesc, stalledDesc,
		rateStartsDesc, rateLimitedDesc, rateWindowDesc, rateLimitDesc,
		tenantRequestsDesc, tenantAlarmsDesc, tenantRowsReadDesc, tenantRowsWrittenDesc, tenantModuleDesc} {
		ch <- d
	}
}

func (c *tenants) Collect(ch chan<- prometheus.Metric) {
	// Usage is the host's own count: it opens no tenant.
	for _, u := range c.m.Usage() {
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{{tenantRequestsDesc, float64(u.Requests)}, {tenantAlarmsDesc, float64(u.Alarms)}, {tenantRowsReadDesc, float64(u.RowsRead)},
			{tenantRowsWrittenDesc, float64(u.RowsWritten)}, {tenantModuleDesc, float64(u.Micros) / 1e6}} {
			ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, m.v, u.Tenant)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dir, err := c.m.Directory().List(ctx, api.TenantsQuery{Limit: api.MaxTenantsPage})
	if err != nil {
		return
	}
	now := time.Now()
	for _, t := range dir.Tenants {
		if !c.m.IsOpen(t.Name) {
			// A scrape does not open closed tenants: it would evict open
			// ones under the memory bound, at every scrape.
			continue
		}
		var q api.QueuesResponse
		if c.get(ctx, t.Name, api.RouteQueues, &q) {
			for _, qc := range q.Queues {
				for state, n := range qc.Counts {
					ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n), t.Name, qc.Queue, state)
				}
				if qc.OldestReadyAt != nil {
					ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, max(now.Sub(*qc.OldestReadyAt).Seconds(), 0), t.Name, qc.Queue)
				}
			}
		}
		var rates api.RatesResponse
		if c.get(ctx, t.Name, api.RouteRates, &rates) {
			for _, r := range rates.Rates {
				ch <- prometheus.MustNewConstMetric(rateStartsDesc, prometheus.CounterValue, float64(r.Started), t.Name, r.Key)
				ch <- prometheus.MustNewConstMetric(rateLimitedDesc, prometheus.CounterValue, float64(r.Limited), t.Name, r.Key)
				ch <- prometheus.MustNewConstMetric(rateWindowDesc, prometheus.GaugeValue, float64(r.InWindow), t.Name, r.Key)
				ch <- prometheus.MustNewConstMetric(rateLimitDesc, prometheus.GaugeValue, float64(r.Limit), t.Name, r.Key)
			}
		}
		var rs api.ReactionsResponse
		if c.get(ctx, t.Name, api.RouteReactions, &rs) {
			for _, r := range rs.Reactions {
				ch <- prometheus.MustNewConstMetric(reactionDesc, prometheus.GaugeValue, float64(r.Lag), t.Name, r.Name)
				ch <- prometheus.MustNewConstMetric(openDesc, prometheus.GaugeValue, float64(len(r.Open)), t.Name, r.Name)
			}
		}
		var ps api.ProjectionsResponse
		if c.get(ctx, t.Name, api.RouteProjections, &ps) {
			for _, p := range ps.Projections {
				if p.Live == nil {
					continue
				}
				stalled := 0.0
				if p.Live.Status == "stalled" {
					stalled = 1
				}
				ch <- prometheus.MustNewConstMetric(projectionDesc, prometheus.GaugeValue, float64(p.Live.Lag), t.Name, p.Name)
				ch <- prometheus.MustNewConstMetric(stalledDesc, prometheus.GaugeValue, stalled, t.Name, p.Name)
			}
		}
	}
}

// get reads a tenant's route through the host, as an admin.
func (c *tenants) get(ctx context.Context, tenant string, r api.Route, out any) bool {
	resp, err := c.m.Inspect(ctx, tenant, do.Request{Kind: do.KindAPI, Method: r.Method, Path: r.Path(tenant),
		Headers: do.Headers{{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}})
	return err == nil && resp.Status == 200 && json.Unmarshal(resp.Body, out) == nil
}
