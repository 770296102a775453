package fencestore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// t0 is when a fixture's jobs are enqueued and claimed.
const t0 int64 = 10_000

// jobs is a job store over a fresh migrated database, with shorthands that
// fail the test on an error.
type jobs struct {
	t  *testing.T
	db *do.DB
	s  *fencestore.Store
}

func newJobs(t *testing.T) *jobs {
	t.Helper()
	db := dosqltest.Open(t)
	return &jobs{t: t, db: db, s: fencestore.New(db, nil)}
}

func (f *jobs) enqueue(now int64, js ...fencestore.NewJob) []fencestore.Enqueued {
	f.t.Helper()
	var out []fencestore.Enqueued
	tx(f.t, f.db, func() (err error) { out, err = f.s.Enqueue(now, js); return })
	return out
}

func (f *jobs) claim(now int64, worker string, limit int, queues ...string) []fencestore.Job {
	f.t.Helper()
	if len(queues) == 0 {
		queues = []string{"default"}
	}
	var out []fencestore.Job
	tx(f.t, f.db, func() (err error) {
		out, _, err = f.s.Claim(now, fencestore.ClaimRequest{Worker: worker, Queues: queues, Limit: limit})
		return
	})
	return out
}

// running enqueues n to run at t0 and has worker "w" claim it then.
func (f *jobs) running(n fencestore.NewJob) fencestore.Job {
	f.t.Helper()
	n.RunAt = t0
	f.enqueue(t0, n)
	got := f.claim(t0, "w", 1, n.Queue)
	require.Len(f.t, got, 1)
	return got[0]
}

// serve runs fn in a transaction as the tenant serves a request: a fence's
// refusal commits (its audit row), any other error rolls back.
func (f *jobs) serve(fn func() error) error {
	var err error
	if txErr := f.db.Tx(func() error {
		if err = fn(); errors.Is(err, api.ErrStale) {
			return nil
		}
		return err
	}); err == nil {
		return txErr
	}
	return err
}

// due applies the work due at now, as the alarm does (no jitter).
func (f *jobs) due(now int64) fencestore.DueResult {
	f.t.Helper()
	var res fencestore.DueResult
	tx(f.t, f.db, func() (err error) { res, err = f.s.ApplyDue(now, "alarm", func() float64 { return 0 }); return })
	return res
}

func (f *jobs) get(id int64) fencestore.Job {
	f.t.Helper()
	j, err := f.s.Get(id)
	require.NoError(f.t, err)
	return j
}

func (f *jobs) attempts(id int64) []fencestore.Attempt {
	f.t.Helper()
	as, err := f.s.Attempts(id)
	require.NoError(f.t, err)
	return as
}

func (f *jobs) rejections(id int64) []fencestore.Rejection {
	f.t.Helper()
	rs, err := f.s.Rejections(id)
	require.NoError(f.t, err)
	return rs
}

// snapshot is every row of the job tables a refusal must leave alone (the
// audit of refusals and the storage counters are not among them).
func (f *jobs) snapshot() map[string][][]any {
	f.t.Helper()
	out := map[string][][]any{}
	for _, table := range []string{"stile_jobs", "stile_job_attempts", "stile_job_deps", "stile_concurrency",
		"stile_schedules", "stile_queues"} {
		out[table] = dosqltest.Rows(f.t, f.db, `SELECT * FROM `+table+` ORDER BY 1, 2`)
	}
	return out
}

// claimOf is the claim a job was handed out with.
func claimOf(j fencestore.Job) fence.Claim {
	return fence.Claim{Worker: j.Worker, Attempt: j.Attempt, Token: j.LeaseToken}
}

// requireCode asserts err is a refusal with code.
func requireCode(t *testing.T, err error, code api.Code) {
	t.Helper()
	var e *api.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, code, e.Code, "%v", err)
}
