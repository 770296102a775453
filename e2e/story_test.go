package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/examples/refunds/handler"
	"github.com/stile-run/stile/stiletest"
)

const (
	storyTenant   = "github.com/stile-run/stile/examples/refunds/tenant"
	storyHandlers = "github.com/stile-run/stile/examples/refunds/handler"
)

// storyProvider is the example's payment provider: one refund or receipt
// per idempotency key, each kind numbered in the order it saw the keys.
type storyProvider struct {
	URL   string
	mu    sync.Mutex
	ids   map[string]string
	calls map[string]int
	made  map[string]int // by path
}

func startStoryProvider(t *testing.T) *storyProvider {
	p := &storyProvider{ids: map[string]string{}, calls: map[string]int{}, made: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.URL.Path + " " + r.Header.Get("Idempotency-Key")
		p.mu.Lock()
		p.calls[key]++
		id, ok := p.ids[key]
		if !ok {
			p.made[r.URL.Path]++
			id = fmt.Sprintf("%s_%d", map[string]string{"/refunds": "re", "/receipts": "rc"}[r.URL.Path], p.made[r.URL.Path])
			p.ids[key] = id
		}
		p.mu.Unlock()
		field := map[string]string{"/refunds": "refund_id", "/receipts": "receipt_id"}[r.URL.Path]
		json.NewEncoder(w).Encode(map[string]string{field: id})
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// story runs the example app's story on one tenant: a payment, its refund
// (the policy calls the provider and records the refund with a command),
// a receipt job calling the provider, and the refunds projection; it
// returns a dump of the recorded state without times, tokens, worker or
// claim ids.
func story(t *testing.T, ten *client.Tenant) string {
	t.Helper()
	ctx := context.Background()
	pay, err := api.CommandOf("pay-1", "payment", "p1", refunds.Pay{Amount: 4200})
	require.NoError(t, err)
	_, err = ten.Command(ctx, pay)
	require.NoError(t, err)
	_, err = ten.Command(ctx, api.Command{ID: "refund-1", Aggregate: "payment", AggregateID: "p1", Type: "RequestRefund"})
	require.NoError(t, err)
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: refunds.ReceiptJob, Args: json.RawMessage(`{"payment":"p1"}`)})
	require.NoError(t, err)

	var job api.Job
	var rows api.QueryResult
	require.Eventually(t, func() bool {
		es, err := ten.Stream(ctx, "payment:p1", 0, 10)
		if err != nil || len(es.Events) < 3 {
			return false
		}
		if job, err = ten.Job(ctx, j.ID); err != nil || job.State != "completed" {
			return false
		}
		rows, err = ten.Query(ctx, refunds.RefundedQuery, nil)
		return err == nil && len(rows.Rows) == 1 && regexp.MustCompile(`"refund_id":"re_`).Match(rows.Rows[0])
	}, 60*time.Second, 50*time.Millisecond, "the story completes")

	es, err := ten.Stream(ctx, "payment:p1", 0, 10)
	require.NoError(t, err)
	rs, err := ten.Reactions(ctx)
	require.NoError(t, err)
	ps, err := ten.Projections(ctx)
	require.NoError(t, err)
	type event struct {
		Seq, Version int64
		Type         string
		Data         json.RawMessage
	}
	type jobDump struct {
		Kind, State     string
		Attempt         int64
		Args, Output    json.RawMessage
		AttemptOutcomes []string
	}
	dump := struct {
		Events      []event
		Job         jobDump
		Refunded    []json.RawMessage
		Reactions   map[string][2]int64 // checkpoint, lag
		Projections map[string]int64    // checkpoint
	}{Refunded: rows.Rows, Reactions: map[string][2]int64{}, Projections: map[string]int64{}}
	for _, e := range es.Events {
		dump.Events = append(dump.Events, event{e.Seq, e.Version, e.Type, e.Data})
	}
	dump.Job = jobDump{Kind: job.Kind, State: job.State, Attempt: job.Attempt, Args: job.Args, Output: job.Output}
	for _, a := range job.Attempts {
		dump.Job.AttemptOutcomes = append(dump.Job.AttemptOutcomes, a.Outcome)
	}
	for _, r := range rs.Reactions {
		require.Empty(t, r.Open, "%s has no open delivery", r.Name)
		dump.Reactions[r.Name] = [2]int64{r.Checkpoint, r.Lag}
	}
	for _, p := range ps.Projections {
		require.NotNil(t, p.Live)
		dump.Projections[p.Name] = p.Live.Checkpoint
	}
	b, err := json.MarshalIndent(dump, "", "  ")
	require.NoError(t, err)
	return string(b)
}

// TestStoryIsTheSameUnderStileDevAndAtTheEdge: the example app runs under
// `stile dev --handlers` (wazero, the handlers in a child process) and in
// workerd with the edge executor (syumai/workers); what each records is
// the same.
func TestStoryIsTheSameUnderStileDevAndAtTheEdge(t *testing.T) {
	t.Parallel()
	devProvider, edgeProvider := startStoryProvider(t), startStoryProvider(t)

	// stile dev --handlers, as a user runs it.
	bin := stileCommand(t)
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--token", token, "--quiet",
		"--handlers", storyHandlers, storyTenant)
	dev.Dir = ".."
	dev.Env = append(os.Environ(), handler.ProviderURLEnv+"="+devProvider.URL)
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	t.Cleanup(func() {
		dev.Process.Signal(syscall.SIGINT)
		dev.Wait()
	})
	apiLine, runLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`), regexp.MustCompile(`handlers of \S+ running: `)
	var url string
	ready := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && (url == "" || !ready) {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		ready = ready || runLine.MatchString(sc.Text())
	}
	require.True(t, ready && url != "", "stile dev --handlers started")
	go io.Copy(io.Discard, stderr)
	devDump := story(t, client.New(url, token, nil).Tenant("acme"))

	// The edge: the same module and handlers in workerd.
	edge := &stiletest.Workerd{Wasm: func(tb testing.TB) []byte { return stiletest.BuildWasm(tb, storyTenant) },
		Token: token, Handlers: storyHandlers, Vars: map[string]string{handler.ProviderURLEnv: edgeProvider.URL}}
	t.Cleanup(edge.Close)
	edge.Start(t)
	edgeDump := story(t, edge.Client().Tenant("acme"))

	require.Equal(t, devDump, edgeDump, "the recorded state is the same")
	require.Contains(t, devDump, `"Refunded"`)
	require.Contains(t, devDump, `"receipt_id": "rc_`)
	for _, p := range []*storyProvider{devProvider, edgeProvider} {
		p.mu.Lock()
		require.Len(t, p.ids, 2, "one refund and one receipt")
		p.mu.Unlock()
	}
}
