package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
)

// Fill adds n ready jobs of kind Kind to the tenant's database in dataDir
// in one statement (through the API a million jobs would take minutes).
// The tenant must exist already (any request creates it). key, if set,
// puts them all under that concurrency key.
func Fill(dataDir, tenant string, n int, queue, key string) error {
	db, err := dosql.Open(filepath.Join(dataDir, "tenants", tenant+".sqlite"))
	if err != nil {
		return err
	}
	defer db.Close()
	var k any
	if key != "" {
		k = key
	}
	params, err := do.EncodeParams(nil, n, Kind, queue, k)
	if err != nil {
		return err
	}
	_, err = db.Query(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1)
		INSERT INTO stile_jobs (kind, queue, priority, args, state, max_attempts, lease_ms, timeout_ms,
			backoff_ms, backoff_max_ms, run_at, created_at, concurrency_key)
		SELECT ?2, ?3, 0, '{}', 'available', 20, 60000, 1800000, 1000, 3600000, 1700000000000 + i, 1700000000000, ?4
		FROM seq`, params)
	if err != nil {
		return fmt.Errorf("fill %d jobs: %w", n, err)
	}
	return nil
}

// ClaimLatencies claims one job at a time n times from queue and returns
// each claim's latency, sorted.
func ClaimLatencies(ctx context.Context, d Driver, queue string, n int) ([]time.Duration, error) {
	out := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		var resp api.ClaimResponse
		if err := call(ctx, d, api.RouteClaim, api.ClaimRequest{Worker: "bench", Queues: []string{queue}}, &resp, 200); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
		if len(resp.Jobs) != 1 {
			return nil, fmt.Errorf("claim from %s: %d jobs, want 1", queue, len(resp.Jobs))
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out, nil
}

// FillFinished adds n completed jobs of kind Kind, finished at finishedAt
// (Unix ms), to the tenant's database in dataDir in one statement: the
// history a tenant keeps for its retention window (a day's completed jobs
// by default). The tenant must exist already.
func FillFinished(dataDir, tenant string, n int, finishedAt int64) error {
	db, err := dosql.Open(filepath.Join(dataDir, "tenants", tenant+".sqlite"))
	if err != nil {
		return err
	}
	defer db.Close()
	params, err := do.EncodeParams(nil, n, Kind, finishedAt)
	if err != nil {
		return err
	}
	_, err = db.Query(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?1)
		INSERT INTO stile_jobs (kind, queue, priority, args, state, attempt, max_attempts, lease_ms, timeout_ms,
			backoff_ms, backoff_max_ms, run_at, created_at, finished_at, output)
		SELECT ?2, 'default', 0, '{}', 'completed', 1, 20, 60000, 1800000, 1000, 3600000, ?3 - 100, ?3 - 100, ?3, '{}'
		FROM seq`, params)
	if err != nil {
		return fmt.Errorf("fill %d finished jobs: %w", n, err)
	}
	return nil
}

// Latencies are what JobLatencies measured, each sorted.
type Latencies struct {
	// Start and Finish are from a job's enqueue to its handler's start and
	// to its end, by the server's times (created, claimed, finished: whole
	// milliseconds).
	Start, Finish []time.Duration
	// Done is from before the enqueue request until a wait for the job
	// (GET /jobs/{id}?wait_ms, which the host answers as the job ends)
	// returns: the completion as the enqueuer sees it.
	Done []time.Duration
}

// JobLatencies enqueues n jobs of kind Kind with args into ten, one every
// every, waits for each, and returns how long they took.
func JobLatencies(ctx context.Context, ten *client.Tenant, n int, every time.Duration, args json.RawMessage) (Latencies, error) {
	start, finish, done := make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range n {
		if i > 0 {
			<-tick.C
		}
		t0 := time.Now()
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: Kind, Args: args})
		if err != nil {
			wg.Wait()
			return Latencies{}, fmt.Errorf("enqueue job %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			got, err := ten.Wait(wctx, j.ID)
			done[i] = time.Since(t0)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("wait for job %s: %w", j.ID, err)
			case got.State != "completed" || len(got.Attempts) == 0 || got.FinishedAt == nil:
				errs[i] = fmt.Errorf("job %s ended %s", j.ID, got.State)
			default:
				start[i] = got.Attempts[0].ClaimedAt.Sub(got.CreatedAt)
				finish[i] = got.FinishedAt.Sub(got.CreatedAt)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Latencies{}, err
		}
	}
	for _, s := range [][]time.Duration{start, finish, done} {
		slices.Sort(s)
	}
	return Latencies{Start: start, Finish: finish, Done: done}, nil
}
