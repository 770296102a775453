package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
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
		if err := call(ctx, d, "POST", "claims", api.ClaimRequest{Worker: "bench", Queues: []string{queue}}, &resp, 200); err != nil {
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

// JobLatencies enqueues n jobs of kind Kind into ten, one every every, and
// waits for each to end; it returns, from the server's times (created,
// claimed and finished), how long each took from its enqueue to its
// handler's start and to its completion, both sorted.
func JobLatencies(ctx context.Context, ten *client.Tenant, n int, every time.Duration, args json.RawMessage) (start, done []time.Duration, err error) {
	ids := make([]string, 0, n)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := range n {
		if i > 0 {
			<-tick.C
		}
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: Kind, Args: args})
		if err != nil {
			return nil, nil, fmt.Errorf("enqueue job %d: %w", i, err)
		}
		ids = append(ids, j.ID)
	}
	for _, id := range ids {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		j, err := ten.Wait(wctx, id)
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("wait for job %s: %w", id, err)
		}
		if j.State != "completed" || len(j.Attempts) == 0 || j.FinishedAt == nil {
			return nil, nil, fmt.Errorf("job %s ended %s", id, j.State)
		}
		start = append(start, j.Attempts[0].ClaimedAt.Sub(j.CreatedAt))
		done = append(done, j.FinishedAt.Sub(j.CreatedAt))
	}
	slices.Sort(start)
	slices.Sort(done)
	return start, done, nil
}
