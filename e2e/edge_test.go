package e2e_test

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp/receipt"
	"github.com/stile-run/stile/stiletest"
	stiletoken "github.com/stile-run/stile/token"
	"github.com/stile-run/stile/worker"
)

var quietLog = slog.New(slog.DiscardHandler)

//go:embed testdata/caller.mjs
var callerWorker []byte

// edgeSubrequests is the edge executor's subrequest budget in these tests:
// low, so a backlog of a few hundred jobs takes several invocations.
const edgeSubrequests = 24

// maxJobsPerInvocation bounds how many jobs one invocation with a budget
// of s subrequests can start, however well its reports batch: a claim is
// sized to (s-used-3)/2 (two requests kept for each job it starts) and
// costs one request itself, so the claims take at most the sum of
// (s-3-u)/2 over u = 0, 1, 2, ...
func maxJobsPerInvocation(s int) int {
	n := 0
	for u := 0; (s-3-u)/2 > 0; u++ {
		n += (s - 3 - u) / 2
	}
	return n
}

// theEdge is the test module's bundle with its handlers (./testhandlers)
// as the edge executor, under syumai/workers in workerd, and a second
// Worker calling it through a service binding. Its own Miniflare: the
// conformance suite's workerd must have no executor claiming its jobs.
var theEdge = &stiletest.Workerd{Wasm: func(tb testing.TB) []byte { return stiletest.BuildWasm(tb, testTenant) },
	Token: token, TestEntry: true, Handlers: "./testhandlers",
	Vars: map[string]string{"STILE_EXECUTOR_SUBREQUESTS": strconv.Itoa(edgeSubrequests),
		"OTEL_EXPORTER_OTLP_ENDPOINT": edgeCollector.URL},
	Files: map[string][]byte{"caller.mjs": callerWorker}}

type edge struct {
	url string
	cl  *client.Client
}

func startEdge(t *testing.T) *edge {
	t.Helper()
	url := theEdge.Start(t)
	return &edge{url: url, cl: theEdge.Client()}
}

// viaBinding asks the caller Worker to call Stile through its service
// binding; it returns the status and body Stile answered.
func (e *edge) viaBinding(t *testing.T, tenant, op string, arg any, token string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"tenant": tenant, "op": op, "arg": arg, "token": token})
	req, err := http.NewRequest("POST", e.url+"/", bytes.NewReader(body))
	require.NoError(t, err)
	req.Host = "caller.test"
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type executorFaults struct {
	Refuse      int `json:"refuse"`
	Kill        int `json:"kill"`
	Invocations int `json:"invocations"`
	MaxCalls    int `json:"maxCalls"`
}

func (e *edge) faults(t *testing.T, set map[string]int) executorFaults {
	t.Helper()
	method, body := "GET", []byte(nil)
	if set != nil {
		method, body = "POST", must(json.Marshal(set))
	}
	req, err := http.NewRequest(method, e.url+"/__executor_faults", bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var f executorFaults
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&f))
	return f
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// edgeProvider is a local HTTP server standing for a payment provider: it
// counts the calls per idempotency key.
type edgeProvider struct {
	URL  string
	mu   sync.Mutex
	keys map[string]int
}

func startProvider(t *testing.T) *edgeProvider {
	p := &edgeProvider{keys: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		p.mu.Lock()
		p.keys[key]++
		p.mu.Unlock()
		io.WriteString(w, "receipt-"+key)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *edgeProvider) calls(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[key]
}

func waitFinal(t *testing.T, ten *client.Tenant, id string) api.Job {
	t.Helper()
	var j api.Job
	require.Eventually(t, func() bool {
		var err error
		j, err = ten.Job(context.Background(), id)
		return err == nil && (j.State == "completed" || j.State == "dead" || j.State == "cancelled")
	}, 30*time.Second, 20*time.Millisecond, "job %s never finished (last: %+v)", id, j)
	return j
}

func noPushes(t *testing.T, ten *client.Tenant) {
	t.Helper()
	var st api.PushStatus
	var err error
	require.Eventually(t, func() bool {
		st, err = ten.Pushes(context.Background())
		return err == nil && len(st.InFlight) == 0 && !st.Pending
	}, 10*time.Second, 20*time.Millisecond, "every push ends (last: %+v, %v)", &st, &err)
}

// The edge tests share the executor faults of one Miniflare: they run one
// after another, in this one test.
func TestEdge(t *testing.T) {
	t.Parallel()
	e := startEdge(t)
	t.Run("JobViaBindingCallsTheProviderOnce", func(t *testing.T) { edgeJob(t, e) })
	t.Run("ReactionSettlesAndItsCommandIsStoredOnce", func(t *testing.T) { edgeReaction(t, e) })
	t.Run("KilledInvocationIsFencedAndRunsAgain", func(t *testing.T) { edgeKilled(t, e) })
	t.Run("RefusedPushIsRetried", func(t *testing.T) { edgeRefused(t, e) })
	t.Run("BacklogBeyondOneBudgetDrains", func(t *testing.T) { edgeBacklog(t, e) })
	t.Run("ManyTenantsOneDeployment", func(t *testing.T) { edgeTenants(t, e) })
	t.Run("BindingCarriesTheToken", func(t *testing.T) { edgeBindingToken(t, e) })
	t.Run("HandlersRunAsAWorker", func(t *testing.T) { edgeHandlersRunAsAWorker(t, e) })
	t.Run("TypedArgsAtTheEdge", func(t *testing.T) { edgeTyped(t, e) })
	t.Run("PushedBatch", func(t *testing.T) { edgeBatch(t, e) })
	t.Run("PushedRateLimit", func(t *testing.T) { edgeRated(t, e) })
	t.Run("IdleTenantsHearNothing", func(t *testing.T) { edgeIdle(t, e) })
	t.Run("Pushed", func(t *testing.T) { pushedSuite(t, e.cl, "edge", false) })
	t.Run("JobSpanJoinsTheEnqueuesTrace", func(t *testing.T) { edgeTraced(t, e) })
	t.Run("HungFetchIsCutAtTheTimeLimit", func(t *testing.T) { edgeHung(t, e) })
}

// hungProvider is a provider that never answers: each call waits until
// the test ends, before its answer's head, or with ?stage=body after the
// head and part of the body. (An aborted fetch does not close its
// connection in workerd, so the provider cannot tell.) It notes when
// calls arrive.
type hungProvider struct {
	URL    string
	called chan struct{}
}

func startHungProvider(t *testing.T) *hungProvider {
	p := &hungProvider{called: make(chan struct{}, 10)}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("stage") == "body" {
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, "the first bytes")
			w.(http.Flusher).Flush()
		}
		p.called <- struct{}{}
		<-release
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handlers
	p.URL = srv.URL
	return p
}

// edgeHung: handlers stuck in an outbound fetch that never answers, or
// never ends its answer, are cut at their time limit: the fetch (or the
// read of its body) is aborted, the attempt is reported failed as timed
// out (not left to run out its lease), the executor logs it, the push
// ends instead of expiring, and the tenant's next job runs.
func edgeHung(t *testing.T, e *edge) {
	ctx := context.Background()
	p := startHungProvider(t)
	ten := e.cl.Tenant("edge-hung")
	// In one batch, so that one claim takes both.
	hung, err := ten.EnqueueBatch(ctx, []api.EnqueueRequest{
		{Kind: "test.hang", Args: must(json.Marshal(map[string]any{"provider": p.URL}))},
		{Kind: "test.hang", Args: must(json.Marshal(map[string]any{"provider": p.URL + "/?stage=body"}))}})
	require.NoError(t, err)
	for range hung {
		select {
		case <-p.called:
		case <-time.After(20 * time.Second):
			t.Fatal("the handlers never called the provider")
		}
	}
	st, err := ten.Pushes(ctx)
	require.NoError(t, err)
	require.Len(t, st.InFlight, 1, "the push whose handlers hang")
	expires := st.InFlight[0].ExpiresAt

	// Enqueued while the handlers hang.
	enqueued := time.Now()
	next, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)

	for _, j := range hung {
		done := waitFinal(t, ten, j.ID)
		require.Equal(t, "dead", done.State, "one attempt, failed")
		require.Len(t, done.Attempts, 1)
		require.Equal(t, "failed", done.Attempts[0].Outcome, "reported by the executor, not left to run out its lease: %+v", done.Attempts[0])
		require.Contains(t, done.Attempts[0].Error, "timed out after 2000 ms")
	}
	require.Eventually(t, func() bool {
		st, err := ten.Pushes(ctx)
		return err == nil && len(st.InFlight) == 0 && !st.Pending
	}, 10*time.Second, 20*time.Millisecond, "the push ends")
	require.True(t, time.Now().Before(expires), "the executor ended the push; it did not expire (at %s)", expires)

	// The tenant's next job is not held up by the hung ones: it runs well
	// before a dead push would have expired in production (35 s).
	second := waitFinal(t, ten, next.ID)
	require.Equal(t, "completed", second.State, second.LastError)
	require.Less(t, second.FinishedAt.Sub(enqueued), 10*time.Second, "the next job waited for a dead push to expire")

	for _, j := range hung {
		require.Eventually(t, func() bool { return loggedTimeout(theEdge.Log(), j.ID) }, 5*time.Second, 50*time.Millisecond,
			"the edge executor logs the timed-out attempt of job %s:\n%s", j.ID, theEdge.Log())
	}
}

// loggedTimeout says the log has the line of the job's timed-out attempt,
// with its tenant, kind, attempt and error.
func loggedTimeout(log, job string) bool {
	for line := range strings.Lines(log) {
		if strings.Contains(line, "job="+job+" ") && strings.Contains(line, "tenant=edge-hung") && strings.Contains(line, "kind=test.hang") &&
			strings.Contains(line, "attempt=1") && strings.Contains(line, "timed out") {
			return true
		}
	}
	return false
}

// edgeIdle: 100 idle tenants in workerd. Once each has run the one alarm
// that records the usage of its creation, the objects receive nothing (no
// push, no poll, no alarm), and a Go worker given no tenant list, following
// the Worker's Directory, holds one open request and calls none of them.
func edgeIdle(t *testing.T, e *edge) {
	ctx := context.Background()
	for i := range 100 {
		_, err := e.cl.Tenant("edge-idle-" + strconv.Itoa(i)).Create(ctx)
		require.NoError(t, err)
	}
	calls := func() map[string]int {
		_, b, err := e.cl.Raw(ctx, "GET", "/__object_calls", nil, nil)
		require.NoError(t, err)
		var m map[string]int
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	// Each tenant's creation is recorded by an alarm 5 s later (the usage
	// alarm), which tells the directory; then nothing is due.
	require.Eventually(t, func() bool {
		page, err := e.cl.Tenants(ctx, api.TenantsQuery{After: "edge-idle-", Limit: api.MaxTenantsPage})
		require.NoError(t, err)
		recorded := 0
		for _, ti := range page.Tenants {
			if strings.HasPrefix(ti.Name, "edge-idle-") && ti.Usage != nil && ti.Usage.Requests == 1 {
				recorded++
			}
		}
		return recorded == 100
	}, 60*time.Second, 250*time.Millisecond, "every idle tenant recorded its creation")
	watch := &watchedRequests{}
	w, err := worker.New(worker.Config{URL: e.url, Token: token, ID: "directory-follower", PollWait: 500 * time.Millisecond,
		HTTPClient: &http.Client{Transport: watch}, Logger: quietLog})
	require.NoError(t, err)
	w.Handle("test.other", func(ctx context.Context, j *worker.Job) (any, error) { return nil, nil })
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	// The worker's first directory poll answered: it knows the tenants.
	require.Eventually(t, func() bool { return watch.polls.Load() >= 1 }, 20*time.Second, time.Millisecond)
	before, polls := calls(), watch.polls.Load()
	// Two polls answered: the one held now and a whole one after it, so
	// more than one poll's wait passed.
	require.Eventually(t, func() bool { return watch.polls.Load() >= polls+2 }, 20*time.Second, time.Millisecond)
	after := calls()
	stop()
	require.NoError(t, <-done)
	for i := range 100 {
		name := "edge-idle-" + strconv.Itoa(i)
		require.Equal(t, before[name], after[name], "idle tenant %s received a request", name)
		require.Equal(t, 2, after[name], "%s heard only its own first request, and the alarm that recorded it", name)
	}
	require.LessOrEqual(t, watch.peak.Load(), int64(1), "one open request, for a hundred tenants")
	require.Zero(t, watch.tenantCalls.Load(), "the worker called no idle tenant")
}

// watchedRequests counts a worker's requests in flight, those to an idle
// tenant's API, and the directory polls answered.
type watchedRequests struct {
	inFlight, peak, tenantCalls, polls atomic.Int64
}

func (w *watchedRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	n := w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	for p := w.peak.Load(); n > p && !w.peak.CompareAndSwap(p, n); p = w.peak.Load() {
	}
	if tenant, _, ok := api.SplitTenantPath(r.URL.Path); ok && strings.HasPrefix(tenant, "edge-idle-") {
		w.tenantCalls.Add(1)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.URL.Path == api.TenantsPath {
		w.polls.Add(1)
	}
	return resp, err
}

func edgeJob(t *testing.T, e *edge) {
	p := startProvider(t)
	status, b := e.viaBinding(t, "edge-job", "enqueue", map[string]any{"kind": "test.echo", "args": map[string]any{"provider": p.URL}}, "")
	require.Equal(t, 200, status, string(b))
	var j api.Job
	require.NoError(t, json.Unmarshal(b, &j))
	ten := e.cl.Tenant("edge-job")
	done := waitFinal(t, ten, j.ID)
	require.Equal(t, "completed", done.State, done.LastError)
	require.Equal(t, int64(1), done.Attempt)
	require.JSONEq(t, `{"attempt":1,"provider":"receipt-`+j.ID+`"}`, string(done.Output))
	require.Regexp(t, `^edge-[0-9a-f]{8}$`, done.Attempts[0].Worker, "run by the edge executor")
	require.Equal(t, 1, p.calls(j.ID), "the provider was called once, with the job's key")
	noPushes(t, ten)
}

// edgeTyped: a typed handler runs at the edge, for a typed enqueue and an
// untyped one of the same JSON alike.
func edgeTyped(t *testing.T, e *edge) {
	ctx := context.Background()
	ten := e.cl.Tenant("edge-typed")
	typed, err := ten.EnqueueArgs(ctx, receipt.Receipt{Order: "o-edge", Cents: 9}, api.EnqueueRequest{})
	require.NoError(t, err)
	untyped, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.receipt", Args: json.RawMessage(`{"order":"o-raw","cents":1}`)})
	require.NoError(t, err)
	for id, want := range map[string]string{typed.ID: `{"order":"o-edge","cents":9,"attempt":1}`, untyped.ID: `{"order":"o-raw","cents":1,"attempt":1}`} {
		done := waitFinal(t, ten, id)
		require.Equal(t, "completed", done.State, done.LastError)
		require.JSONEq(t, want, string(done.Output))
		require.Regexp(t, `^edge-[0-9a-f]{8}$`, done.Attempts[0].Worker, "run by the edge executor")
	}
}

// edgeBatch: jobs of a batch kind pushed to the edge run in one call of
// their batch handler, and each outcome is its own: the one that fails is
// retried alone, after its backoff.
func edgeBatch(t *testing.T, e *edge) {
	ctx := context.Background()
	ten := e.cl.Tenant("edge-batch")
	reqs := make([]api.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.batch", Args: json.RawMessage(fmt.Sprintf(`{"fail":%v}`, i == 2))}
	}
	js, err := ten.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	for i, j := range js {
		done := waitFinal(t, ten, j.ID)
		require.Equal(t, "completed", done.State, done.LastError)
		require.Regexp(t, `^edge-[0-9a-f]{8}$`, done.Attempts[0].Worker, "run by the edge executor")
		var out struct{ Batch, Attempt int64 }
		require.NoError(t, json.Unmarshal(done.Output, &out))
		if i == 2 {
			require.Len(t, done.Attempts, 2, "the failed job ran again")
			require.Equal(t, "failing this one, as asked", done.Attempts[0].Error)
			require.EqualValues(t, 1, out.Batch, "alone")
			continue
		}
		require.Len(t, done.Attempts, 1, "the others ran once")
		require.EqualValues(t, 5, out.Batch, "the five pushed jobs ran in one call")
	}
}

// edgeRated: jobs of a rate key pushed to the edge start no faster than
// the key allows, and those it holds back start once it opens (the
// tenant's alarm pushes them), with nobody claiming by hand.
func edgeRated(t *testing.T, e *edge) {
	ctx := context.Background()
	ten := e.cl.Tenant("edge-rated")
	const period = 2 * time.Second
	_, err := ten.SetRate(ctx, "edge", 2, period)
	require.NoError(t, err)
	reqs := make([]api.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = api.EnqueueRequest{Kind: "test.echo", RateKey: "edge"}
	}
	js, err := ten.EnqueueBatch(ctx, reqs)
	require.NoError(t, err)
	var starts []time.Time
	for _, j := range js {
		done := waitFinal(t, ten, j.ID)
		require.Equal(t, "completed", done.State, done.LastError)
		require.Len(t, done.Attempts, 1)
		require.Regexp(t, `^edge-[0-9a-f]{8}$`, done.Attempts[0].Worker, "run by the edge executor")
		starts = append(starts, done.Attempts[0].ClaimedAt)
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	for i := range starts {
		in := 0
		for _, s := range starts[i:] {
			if s.Before(starts[i].Add(period)) {
				in++
			}
		}
		require.LessOrEqual(t, in, 2, "starts %v: no more than 2 in any %s", starts, period)
	}
	r, err := ten.Rate(ctx, "edge")
	require.NoError(t, err)
	require.EqualValues(t, 5, r.Started)
	require.Positive(t, r.Limited, "jobs waited for the key")
}

// edgeHandlersRunAsAWorker: the handler code at the edge does not find
// the deployment's secret in its environment, and the executor takes a
// push only with a worker token for its tenant (which the tenant's object
// mints for each push), not with the secret.
func edgeHandlersRunAsAWorker(t *testing.T, e *edge) {
	ctx := context.Background()
	ten := e.cl.Tenant("edge-credential")
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"credential":true}`)})
	require.NoError(t, err)
	done := waitFinal(t, ten, j.ID)
	require.Equal(t, "completed", done.State, done.LastError)
	require.JSONEq(t, `{"attempt":1,"credential":""}`, string(done.Output), "the handler code has no STILE_TOKEN")
	require.Regexp(t, `^edge-[0-9a-f]{8}$`, done.Attempts[0].Worker, "run by the edge executor")

	for _, tok := range []string{token, mintFor(t, "*", api.RoleAdmin), mintFor(t, "other", api.RoleWorker)} {
		req, err := http.NewRequestWithContext(ctx, "POST", e.url+api.ExecutorPath,
			strings.NewReader(`{"tenant":"edge-credential","id":"forged-push","jobs":1}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 401, resp.StatusCode, "a push needs a worker token for its tenant: %s", b)
		require.Contains(t, string(b), "a push carries a worker token for its tenant")
	}
	noPushes(t, ten)
}

func mintFor(t *testing.T, scope string, role api.Role) string {
	tok, err := stiletoken.Mint(token, stiletoken.Claims{ID: "t-" + string(role), Scope: scope, Role: role, Exp: time.Now().Add(time.Hour).Unix()})
	require.NoError(t, err)
	return tok
}

func edgeReaction(t *testing.T, e *edge) {
	ctx := context.Background()
	ten := e.cl.Tenant("edge-refund")
	status, b := e.viaBinding(t, "edge-refund", "command", api.Command{ID: "c1", Aggregate: "payment", AggregateID: "p1", Type: "Create",
		Data: json.RawMessage(`{"amount":5}`)}, "")
	require.Equal(t, 200, status, string(b))
	_, err := ten.Command(ctx, api.Command{ID: "r1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		es, err := ten.Stream(ctx, "payment:p1", 0, 100)
		return err == nil && len(es.Events) >= 3
	}, 30*time.Second, 20*time.Millisecond, "the refund policy runs at the edge and its command is applied")
	noPushes(t, ten)
	es, err := ten.Stream(ctx, "payment:p1", 0, 100)
	require.NoError(t, err)
	require.Len(t, es.Events, 3, "created, refund requested, refund recorded: once")
	require.Equal(t, "RefundRecorded", es.Events[2].Type)
}

func edgeKilled(t *testing.T, e *edge) {
	p := startProvider(t)
	before := e.faults(t, map[string]int{"kill": 1})
	ten := e.cl.Tenant("edge-killed")
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.fast", Args: must(json.Marshal(map[string]any{"provider": p.URL}))})
	require.NoError(t, err)
	done := waitFinal(t, ten, j.ID)
	require.Equal(t, "completed", done.State, done.LastError)
	require.Equal(t, int64(2), done.Attempt)
	require.Len(t, done.Attempts, 2)
	require.Equal(t, "lease_expired", done.Attempts[0].Outcome, "the killed invocation's attempt ran out its lease")
	require.Equal(t, "completed", done.Attempts[1].Outcome)
	require.NotEqual(t, done.Attempts[0].Worker, done.Attempts[1].Worker, "a second invocation, pushed by the object")
	require.Equal(t, 2, p.calls(j.ID), "the provider saw the one idempotency key twice")
	require.Greater(t, e.faults(t, nil).Invocations, before.Invocations+1)
	noPushes(t, ten)
}

func edgeRefused(t *testing.T, e *edge) {
	before := e.faults(t, map[string]int{"refuse": 1})
	ten := e.cl.Tenant("edge-refused")
	j, err := ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	require.NoError(t, err)
	done := waitFinal(t, ten, j.ID)
	require.Equal(t, "completed", done.State)
	require.Equal(t, int64(1), done.Attempt)
	after := e.faults(t, nil)
	require.Zero(t, after.Refuse, "the first push was refused")
	require.GreaterOrEqual(t, after.Invocations, before.Invocations+2, "and retried from the alarm")
	noPushes(t, ten)
}

func edgeBacklog(t *testing.T, e *edge) {
	before := e.faults(t, map[string]int{"maxCalls": 0})
	ten := e.cl.Tenant("edge-backlog")
	// Reports go in batches, so a backlog beyond one budget is one that
	// no invocation could start on its own, however few requests it used.
	per := maxJobsPerInvocation(edgeSubrequests)
	backlog := 2*per + 20
	var reqs []api.EnqueueRequest
	for range backlog {
		reqs = append(reqs, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
	}
	js, err := ten.EnqueueBatch(context.Background(), reqs)
	require.NoError(t, err)
	for _, j := range js {
		done := waitFinal(t, ten, j.ID)
		require.Equal(t, "completed", done.State)
		require.Equal(t, int64(1), done.Attempt, "each job ran once")
	}
	after := e.faults(t, nil)
	require.LessOrEqual(t, after.MaxCalls, edgeSubrequests, "no invocation made more calls than its subrequest budget")
	require.GreaterOrEqual(t, after.Invocations-before.Invocations, (backlog+per-1)/per,
		"%d jobs with at most %d per invocation took several invocations", backlog, per)
	noPushes(t, ten)
}

func edgeTenants(t *testing.T, e *edge) {
	ids := map[string]string{}
	for i := range 20 {
		name := "edge-many-" + strconv.Itoa(i)
		j, err := e.cl.Tenant(name).Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)})
		require.NoError(t, err)
		ids[name] = j.ID
	}
	var worst time.Duration
	for name, id := range ids {
		done := waitFinal(t, e.cl.Tenant(name), id)
		require.Equal(t, "completed", done.State)
		worst = max(worst, done.Attempts[0].ClaimedAt.Sub(done.CreatedAt))
	}
	t.Logf("20 tenants, one deployment: the slowest job was claimed %s after its enqueue", worst)
}

func edgeBindingToken(t *testing.T, e *edge) {
	status, b := e.viaBinding(t, "edge-token", "enqueue", map[string]any{"kind": "test.echo"}, "not-the-token")
	require.Equal(t, 502, status, string(b))
	var refusal struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(b, &refusal))
	require.Equal(t, 401, refusal.Status, "a binding carries the token like any caller")
	require.Equal(t, string(api.CodeUnauthorized), refusal.Code)
	_, err := e.cl.Tenant("edge-token").List(context.Background(), "", "", "", "", 10)
	requireCode(t, err, http.StatusNotFound, api.CodeTenantNotFound) // the refused call created nothing
}
