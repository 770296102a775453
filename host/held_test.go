package host_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// claimRuns counts the runs of a claim (its UPDATE, which every claim of
// one queue runs, found or not) per tenant.
type claimRuns struct{ n atomic.Int64 }

func (c *claimRuns) fault(_, sql string) bool {
	if strings.HasPrefix(strings.TrimSpace(sql), "UPDATE stile_jobs SET state = 'running'") {
		c.n.Add(1)
	}
	return false
}

// heldHarness runs the test module natively, counting claim runs.
func heldHarness(t testing.TB) (*host.Manager, *claimRuns) {
	runs := &claimRuns{}
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Fault: runs.fault})
	return h.Manager(), runs
}

// holder holds long-poll claims on a manager and collects their answers.
type holder struct {
	m      *host.Manager
	tenant string
	ctx    context.Context
	wg     sync.WaitGroup
	out    chan api.ClaimResponse
}

func newHolder(t testing.TB, m *host.Manager, tenant string) *holder {
	ctx, cancel := context.WithCancel(context.Background())
	h := &holder{m: m, tenant: tenant, ctx: ctx, out: make(chan api.ClaimResponse, 1024)}
	t.Cleanup(func() { cancel(); h.wg.Wait() })
	return h
}

// claim sends a claim as token for queue, waiting up to 30 s, in the
// background.
func (h *holder) claim(token, queue string) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		resp, err := h.m.Do(h.ctx, h.tenant, claimRequest(h.tenant, token, queue, 30_000))
		if err != nil || h.ctx.Err() != nil {
			return
		}
		var c api.ClaimResponse
		if json.Unmarshal(resp.Body, &c) == nil {
			h.out <- c
		}
	}()
}

func claimRequest(tenant, token, queue string, waitMs int64) do.Request {
	body, _ := json.Marshal(api.ClaimRequest{Worker: "w-" + token, Queues: []string{queue}, WaitMs: waitMs})
	return do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/" + tenant + "/claims", Body: body,
		Headers: do.Headers{{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}, {Name: do.HeaderTokenID, Value: token}}}
}

func enqueue(t testing.TB, m *host.Manager, tenant, queue string) {
	body, _ := json.Marshal(api.EnqueueRequest{Kind: "test.echo", Queue: queue})
	resp, err := m.Do(context.Background(), tenant, do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/" + tenant + "/jobs", Body: body})
	require.NoError(t, err)
	require.Equal(t, 201, resp.Status, string(resp.Body))
}

// waitRuns waits until the claims ran n times in all (each held claim ran
// once: it is held).
func waitRuns(t testing.TB, runs *claimRuns, n int64) {
	require.Eventually(t, func() bool { return runs.n.Load() >= n }, 20*time.Second, time.Millisecond,
		"%d claim runs, want %d", runs.n.Load(), n)
	require.Equal(t, n, runs.n.Load())
}

func TestAnEnqueueWakesOnlyTheClaimsOfItsQueue(t *testing.T) {
	t.Parallel()
	m, runs := heldHarness(t)
	enqueue(t, m, "acme", "b") // the tenant exists before the claims
	h := newHolder(t, m, "acme")
	for range 10 {
		h.claim("tok", "a")
	}
	waitRuns(t, runs, 10)
	for range 5 {
		enqueue(t, m, "acme", "b")
	}
	require.Never(t, func() bool { return runs.n.Load() > 10 }, 300*time.Millisecond, 5*time.Millisecond,
		"enqueues to queue b ran no held claim of queue a")
	require.Empty(t, h.out)

	enqueue(t, m, "acme", "a")
	select {
	case c := <-h.out:
		require.Len(t, c.Jobs, 1)
		require.Equal(t, "a", c.Jobs[0].Queue)
	case <-time.After(20 * time.Second):
		t.Fatal("the enqueue to queue a woke no claim of it")
	}
}

func TestHeldClaimsAreBoundedPerTokenAndPerTenant(t *testing.T) {
	t.Parallel()
	m, runs := heldHarness(t)
	enqueue(t, m, "acme", "b")
	h := newHolder(t, m, "acme")
	for range api.MaxHeldClaimsPerToken {
		h.claim("t0", "a")
	}
	waitRuns(t, runs, api.MaxHeldClaimsPerToken)

	// One more of the same token is answered at once, empty (held, it
	// would end with ctx, without RetryAfterMs).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := m.Do(ctx, "acme", claimRequest("acme", "t0", "a", 30_000))
	require.NoError(t, err)
	var c api.ClaimResponse
	require.NoError(t, json.Unmarshal(resp.Body, &c))
	require.Empty(t, c.Jobs)
	require.Equal(t, api.HeldRetryAfter.Milliseconds(), c.RetryAfterMs)
	require.Zero(t, resp.HoldMs)

	// Other tokens are held up to the tenant's bound.
	n := int64(api.MaxHeldClaimsPerToken + 1)
	for i := 1; n < api.MaxHeldClaims+1; i++ {
		for range min(api.MaxHeldClaimsPerToken, api.MaxHeldClaims+1-n) {
			h.claim("t"+itoa(i), "a")
			n++
		}
	}
	waitRuns(t, runs, n)
	resp, err = m.Do(ctx, "acme", claimRequest("acme", "other", "a", 30_000))
	require.NoError(t, err)
	c = api.ClaimResponse{}
	require.NoError(t, json.Unmarshal(resp.Body, &c))
	require.Empty(t, c.Jobs)
	require.Equal(t, api.HeldRetryAfter.Milliseconds(), c.RetryAfterMs, "the tenant holds as many claims as it may")

	// A held claim that runs again keeps its place: an enqueue to its
	// queue is taken by one of them.
	enqueue(t, m, "acme", "a")
	select {
	case c := <-h.out:
		require.Len(t, c.Jobs, 1)
	case <-time.After(20 * time.Second):
		t.Fatal("the enqueue woke no held claim")
	}
}

// BenchmarkEnqueuesWithHeldClaims measures 20 enqueues to queue b (one op)
// with none or 200 claims of queue a held (by four tokens): an enqueue
// must cost the same however many claims of other queues wait. cpu-ns/op
// is the process's CPU time (the server's, and its client's) per 20
// enqueues, the woken claims' runs included. Run:
// go test ./host -run XXX -bench EnqueuesWithHeldClaims -benchtime 100x
func BenchmarkEnqueuesWithHeldClaims(b *testing.B) {
	for _, held := range []int{0, 200} {
		b.Run("held="+itoa(held), func(b *testing.B) {
			m, runs := heldHarness(b)
			enqueue(b, m, "acme", "b")
			h := newHolder(b, m, "acme")
			for i := range held {
				h.claim("t"+itoa(i%4), "a")
			}
			waitRuns(b, runs, int64(held))
			b.ResetTimer()
			cpu := processCPU()
			for range b.N {
				for range 20 {
					enqueue(b, m, "acme", "b")
				}
			}
			b.StopTimer()
			// Claims woken run after the enqueues that woke them: their
			// cost counts once they are held again.
			for n := int64(-1); n != runs.n.Load(); {
				n = runs.n.Load()
				time.Sleep(20 * time.Millisecond)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(runs.n.Load()-int64(held))/float64(b.N), "claim_runs/op")
		})
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
