package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/e2e/testhandlers"
	"github.com/stile-run/stile/stiletest"
)

// recorder keeps the statements a tenant ran while it is on.
type recorder struct {
	mu   sync.Mutex
	on   bool
	seen []string
}

func (r *recorder) record(tenant, sql string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on && !slices.Contains(r.seen, sql) {
		r.seen = append(r.seen, sql)
	}
	return false
}

func (r *recorder) set(on bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = on
	return slices.Clone(r.seen)
}

// fullScan matches a plan step that reads a whole job, event or delivery
// table, or an index of it over finished work as well as live: what a
// tenant keeps grows with its history, and a request must not read it.
// The partial indexes of live work (ready, leased, due, open) are bounded
// by the work itself.
var fullScan = regexp.MustCompile(`^SCAN (stile_jobs|stile_events|stile_inbox|stile_job_attempts|stile_job_deps)\b(?: USING (?:COVERING )?INDEX (\w+))?`)

// historyIndex matches the indexes over finished work: retention reads
// them, in the alarm's slices, and no request may.
var historyIndex = regexp.MustCompile(`\b(stile_jobs_finished|stile_jobs_state|stile_inbox_settled|stile_commands_at|stile_scheduled_commands_done|stile_audit_at)\b`)

var liveIndexes = []string{"stile_jobs_ready", "stile_jobs_ready_keyed", "stile_jobs_due", "stile_jobs_lease",
	"stile_inbox_open", "stile_inbox_lease", "stile_inbox_retry"}

// TestRequestPathReadsNoHistory runs the requests of pushed work (an
// enqueue, its push, claim, report and the push's end; a command, its
// reactions' push, claim and settlement; due work from the alarm) in a
// tenant that keeps finished jobs and settled deliveries, and asks SQLite
// for the plan of every statement they ran: none reads a whole job,
// event or delivery table.
func TestRequestPathReadsNoHistory(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	dir := t.TempDir()
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Handlers: testhandlers.Register, Pushed: true, RealClock: true,
		Token: token, DataDir: dir, Fault: rec.record})
	ctx := context.Background()
	ten := h.Tenant("history")
	var last api.Job
	for range 4 {
		reqs := make([]api.EnqueueRequest, 100)
		for i := range reqs {
			reqs[i] = api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{}`)}
		}
		js, err := ten.EnqueueBatch(ctx, reqs)
		require.NoError(t, err)
		last = js[len(js)-1]
	}
	for i := range 40 {
		_, err := ten.Command(ctx, api.Command{ID: fmt.Sprintf("n%d", i), Aggregate: "bulk", AggregateID: "h", Type: "Note", Data: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	waitEnded(t, ten, last.ID)
	h.For("history").WaitIdle(t)

	rec.set(true)
	// A burst over three queues (claims that fill their limit ask the
	// ready indexes whether they left more), jobs under a concurrency key
	// (read by key), a retry (pushed from the alarm).
	var burst []api.EnqueueRequest
	for i := range 30 {
		burst = append(burst, api.EnqueueRequest{Kind: "test.echo", Queue: []string{"default", "first", "second"}[i%3], Args: json.RawMessage(`{}`)})
	}
	for range 3 {
		burst = append(burst, api.EnqueueRequest{Kind: "test.limited", Args: json.RawMessage(`{}`)})
	}
	bs, err := ten.EnqueueBatch(ctx, burst)
	require.NoError(t, err)
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast", Args: json.RawMessage(`{"fail_times":1}`)})
	require.NoError(t, err)
	_, err = ten.Command(ctx, api.Command{ID: "last", Aggregate: "bulk", AggregateID: "h", Type: "Note",
		Data: json.RawMessage(`{"fail_first":true}`)})
	require.NoError(t, err)
	require.Equal(t, "completed", waitEnded(t, ten, j.ID).State)
	for _, b := range bs[:30] {
		require.Equal(t, "completed", waitEnded(t, ten, b.ID).State)
	}
	require.Eventually(t, func() bool {
		rs, err := ten.Reactions(ctx)
		if err != nil {
			return false
		}
		for _, r := range rs.Reactions {
			if len(r.Open) > 0 || r.Lag > 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	h.For("history").WaitIdle(t)
	seen := rec.set(false)
	require.NotEmpty(t, seen)

	conn, err := sqlite3.Open(filepath.Join(dir, "tenants", "history.sqlite"))
	require.NoError(t, err)
	defer conn.Close()
	planned := 0
	for _, sql := range seen {
		stmt, _, err := conn.Prepare("EXPLAIN QUERY PLAN " + sql)
		if err != nil {
			t.Errorf("a statement on the request path cannot be explained: %v\n  %s", err, oneLineSQL(sql))
			continue
		}
		var plan []string
		for stmt.Step() {
			plan = append(plan, stmt.ColumnText(3))
		}
		require.NoError(t, stmt.Close())
		planned++
		for _, step := range plan {
			if m := historyIndex.FindString(step); m != "" {
				t.Errorf("a statement on the request path reads history through %s:\n  %s\nplan:\n  %s", m, oneLineSQL(sql), strings.Join(plan, "\n  "))
			}
			m := fullScan.FindStringSubmatch(step)
			if m == nil || slices.Contains(liveIndexes, m[2]) {
				continue
			}
			t.Errorf("a statement on the request path reads %s whole:\n  %s\nplan:\n  %s", m[1], oneLineSQL(sql), strings.Join(plan, "\n  "))
		}
	}
	t.Logf("%d statements explained", planned)
	require.Greater(t, planned, 20, "the request path's statements were explained")
}

func oneLineSQL(s string) string { return strings.Join(strings.Fields(s), " ") }
