package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// watched counts a worker's requests: those in flight at once, those to
// each tenant's API, and the directory polls answered.
type watched struct {
	inFlight, peak atomic.Int64
	polls          atomic.Int64
	mu             sync.Mutex
	byTenant       map[string]int
}

func (w *watched) RoundTrip(r *http.Request) (*http.Response, error) {
	n := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for {
		p := w.peak.Load()
		if n <= p || w.peak.CompareAndSwap(p, n) {
			break
		}
	}
	if tenant, _, ok := api.SplitTenantPath(r.URL.Path); ok {
		w.mu.Lock()
		w.byTenant[tenant]++
		w.mu.Unlock()
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.URL.Path == api.TenantsPath {
		w.polls.Add(1)
	}
	return resp, err
}

func (w *watched) tenantCalls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, c := range w.byTenant {
		n += c
	}
	return n
}

// TestWithoutATenantListTheWorkerFollowsTheDirectory: 20 tenants with a
// job each and the default 10 handlers: every job runs (a long-poll per
// tenant would have held every slot); 100 idle tenants then cost the
// worker one open request, and none of them hears from it.
func TestWithoutATenantListTheWorkerFollowsTheDirectory(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true, Token: token})
	ctx := context.Background()
	// Touched once, a few at a time: the tenants exist, and are idle.
	var touched sync.WaitGroup
	errs := make([]error, 100)
	slots := make(chan struct{}, 8)
	for i := range 100 {
		slots <- struct{}{}
		touched.Go(func() {
			defer func() { <-slots }()
			_, errs[i] = h.Tenant("idle-" + strconv.Itoa(i)).Status(ctx)
		})
	}
	touched.Wait()
	require.NoError(t, errors.Join(errs...))
	watch := &watched{byTenant: map[string]int{}}
	var ran atomic.Int64
	stop, _ := start(t, worker.Config{URL: h.URL, Token: token, ID: "feed", PollWait: 500 * time.Millisecond,
		HTTPClient: &http.Client{Transport: watch}},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			ran.Add(1)
			return j.Tenant, nil
		}})
	defer stop()

	ids := map[string]string{}
	for i := range 20 {
		name := "busy-" + strconv.Itoa(i)
		j, err := h.Tenant(name).Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		ids[name] = j.ID
	}
	for name, id := range ids {
		j := waitState(t, h.Tenant(name), id, "completed")
		require.JSONEq(t, strconv.Quote(name), string(j.Output))
	}
	require.Equal(t, int64(20), ran.Load())

	// Settled: the worker holds its directory poll, and nothing else.
	require.Eventually(t, func() bool { return watch.inFlight.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	before, polls := watch.tenantCalls(), watch.polls.Load()
	// Two polls answered: the one held now and a whole one after it, so
	// more than one poll's wait passed.
	require.Eventually(t, func() bool { return watch.polls.Load() >= polls+2 }, 10*time.Second, time.Millisecond)
	require.Equal(t, before, watch.tenantCalls(), "idle tenants receive no request")
	require.LessOrEqual(t, watch.inFlight.Load(), int64(1), "one open request, whatever the number of tenants")
	watch.mu.Lock()
	for tenant := range watch.byTenant {
		require.False(t, strings.HasPrefix(tenant, "idle-"), "the worker never called idle tenant %s", tenant)
	}
	watch.mu.Unlock()

	d, err := h.Client().Tenants(ctx, api.TenantsQuery{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, d.Tenants, 120, "every tenant is in the directory")
	for _, ti := range d.Tenants {
		require.False(t, ti.Ready, "%s: its work is done, it is idle", ti.Name)
	}
}

// A worker following the directory runs a job enqueued while a slow one
// of the same tenant runs at once: the tenant becomes ready again, and it
// gets a drain of its own beside the one finishing the slow job.
func TestFollowingTheDirectoryNoJobWaitsBehindASlowOne(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), RealClock: true, Token: token})
	ctx := context.Background()
	release := make(chan struct{})
	stop, _ := start(t, worker.Config{URL: h.URL, Token: token, ID: "feed-slow", PollWait: 2 * time.Second},
		map[string]worker.Handler{"test.echo": func(ctx context.Context, j *worker.Job) (any, error) {
			if string(j.Args) == `{"slow":true}` {
				<-release
			}
			return nil, nil
		}})
	defer stop()
	defer close(release)
	ten := h.Tenant("acme")
	slow, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"slow":true}`)})
	require.NoError(t, err)
	waitState(t, ten, slow.ID, "running")
	fast, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	waitState(t, ten, fast.ID, "completed")
	j, err := ten.Job(ctx, slow.ID)
	require.NoError(t, err)
	require.Equal(t, "running", j.State, "the new job ran while the slow one still held its drain")
}
