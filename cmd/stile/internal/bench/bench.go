package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/server"
)

// Kind is the job kind the benchmark enqueues; the default module has it.
const Kind = "echo"

// Tenant is the tenant the benchmark uses.
const Tenant = "bench"

// Driver sends one API request of the benchmark's tenant: route r, its
// path filled with params.
type Driver interface {
	Do(ctx context.Context, r api.Route, body []byte, params ...string) (int, []byte, error)
}

// InProcess drives a manager directly, as the HTTP server does.
type InProcess struct{ M *host.Manager }

// Do implements Driver.
func (d InProcess) Do(ctx context.Context, r api.Route, body []byte, params ...string) (int, []byte, error) {
	resp, err := d.M.Do(ctx, Tenant, do.Request{Kind: do.KindAPI, Method: r.Method, Path: r.Path(Tenant, params...), Body: body})
	return resp.Status, resp.Body, err
}

// HTTP drives a server over loopback.
type HTTP struct{ C *client.Client }

// Do implements Driver.
func (d HTTP) Do(ctx context.Context, r api.Route, body []byte, params ...string) (int, []byte, error) {
	return d.C.Raw(ctx, r.Method, r.Path(Tenant, params...), body, nil)
}

// Serve puts m behind an HTTP server on a loopback port.
func Serve(m *host.Manager, token string) (HTTP, func(), error) {
	srv, err := server.New(m, token)
	if err != nil {
		return HTTP{}, nil, err
	}
	ts := httptest.NewServer(srv)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	return HTTP{C: client.New(ts.URL, token, &http.Client{Transport: tr})}, ts.Close, nil
}

// call sends route r (its path filled with params) with in as JSON, and
// decodes the answer into out when its status is want.
func call(ctx context.Context, d Driver, r api.Route, in, out any, want int, params ...string) error {
	var body []byte // none for a route that reads none (a body there is refused)
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	status, b, err := d.Do(ctx, r, body, params...)
	if err != nil {
		return err
	}
	if status != want {
		return fmt.Errorf("%s %q: %d %s", r, params, status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Cycle runs n jobs through enqueue, claim and report, batch jobs per
// request (1: three requests per job), and returns the elapsed time.
func Cycle(ctx context.Context, d Driver, n, batch int) (time.Duration, error) {
	args := json.RawMessage(`{"n":1}`)
	start := time.Now()
	for done := 0; done < n; done += batch {
		size := min(batch, n-done)
		if size == 1 {
			var j api.Job
			if err := call(ctx, d, api.RouteEnqueue, api.EnqueueRequest{Kind: Kind, Args: args}, &j, 201); err != nil {
				return 0, err
			}
		} else {
			reqs := make([]api.EnqueueRequest, size)
			for i := range reqs {
				reqs[i] = api.EnqueueRequest{Kind: Kind, Args: args}
			}
			if err := call(ctx, d, api.RouteEnqueueMany, api.EnqueueBatchRequest{Jobs: reqs}, nil, 201); err != nil {
				return 0, err
			}
		}
		var claimed api.ClaimResponse
		if err := call(ctx, d, api.RouteClaim, api.ClaimRequest{Worker: "bench", Limit: size}, &claimed, 200); err != nil {
			return 0, err
		}
		if len(claimed.Jobs) != size {
			return 0, fmt.Errorf("claimed %d jobs, want %d", len(claimed.Jobs), size)
		}
		if size == 1 {
			c := claimed.Jobs[0]
			r := api.ReportRequest{Claim: api.Claim{Worker: "bench", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
				Outcome: api.OutcomeCompleted, Output: args}
			if err := call(ctx, d, api.RouteReport, r, nil, 200, c.ID); err != nil {
				return 0, err
			}
			continue
		}
		reports := make([]api.BatchReport, size)
		for i, c := range claimed.Jobs {
			reports[i] = api.BatchReport{JobID: c.ID, ReportRequest: api.ReportRequest{
				Claim:   api.Claim{Worker: "bench", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
				Outcome: api.OutcomeCompleted, Output: args}}
		}
		var res api.BatchReportResponse
		if err := call(ctx, d, api.RouteReportMany, api.BatchReportRequest{Reports: reports}, &res, 200); err != nil {
			return 0, err
		}
		for _, r := range res.Results {
			if r.Error != nil {
				return 0, fmt.Errorf("report %s: %s", r.JobID, r.Error.Message)
			}
		}
	}
	return time.Since(start), nil
}

// Latency enqueues n jobs at the given rate while a worker loop
// long-polls, runs and reports them, and returns each job's time from
// enqueue to its completed report, sorted.
func Latency(ctx context.Context, d Driver, n int, every time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	starts := make(map[string]time.Time, n)
	startc := make(chan [2]any, n)
	errc := make(chan error, 2)
	lat := make([]time.Duration, 0, n)
	go func() {
		for i := 0; i < n; i++ {
			t0 := time.Now()
			var j api.Job
			if err := call(ctx, d, api.RouteEnqueue, api.EnqueueRequest{Kind: Kind, Args: json.RawMessage(`{}`)}, &j, 201); err != nil {
				errc <- err
				return
			}
			startc <- [2]any{j.ID, t0}
			time.Sleep(every)
		}
	}()
	for len(lat) < n {
		var claimed api.ClaimResponse
		if err := call(ctx, d, api.RouteClaim, api.ClaimRequest{Worker: "latency", Limit: 10, WaitMs: 5000}, &claimed, 200); err != nil {
			return nil, err
		}
		for _, c := range claimed.Jobs {
			r := api.ReportRequest{Claim: api.Claim{Worker: "latency", Attempt: c.Attempt, LeaseToken: c.LeaseToken},
				Outcome: api.OutcomeCompleted}
			if err := call(ctx, d, api.RouteReport, r, nil, 200, c.ID); err != nil {
				return nil, err
			}
			done := time.Now()
			for {
				if t0, ok := starts[c.ID]; ok {
					lat = append(lat, done.Sub(t0))
					break
				}
				select {
				case s := <-startc:
					starts[s[0].(string)] = s[1].(time.Time)
				case err := <-errc:
					return nil, err
				}
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat, nil
}

// Percentile returns the p-th percentile (0-100) of sorted durations.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// Rate formats n items over d as items per second.
func Rate(n int, d time.Duration) string {
	return strconv.FormatFloat(float64(n)/d.Seconds(), 'f', 0, 64)
}
