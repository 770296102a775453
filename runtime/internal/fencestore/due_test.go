package fencestore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

func job(kind string) fencestore.NewJob {
	return fencestore.NewJob{Kind: kind, Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, LeaseMs: 1000,
		TimeoutMs: 1000, BackoffMs: 100, BackoffMaxMs: 1000, Tags: []byte(`[]`)}
}

func tx(t *testing.T, db *do.DB, fn func() error) {
	t.Helper()
	require.NoError(t, db.Tx(fn))
}

// NextDue counts every item due at the earliest time: jobs claimed
// together share their lease's end, a job waits for that very time, and a
// schedule ticks then; items due later are not counted.
func TestNextDueCountsWhatSharesTheEarliestTime(t *testing.T) {
	db := dosqltest.Open(t)
	s := fencestore.New(db, nil)
	const now = 10_000
	later := job("k")
	later.RunAt = now + 1000 // due when the leases end
	farther := job("k")
	farther.RunAt = now + 5000
	tx(t, db, func() error {
		_, err := s.Enqueue(now, []fencestore.NewJob{job("k"), job("k"), job("k"), later, farther})
		return err
	})
	tx(t, db, func() error {
		got, _, err := s.Claim(now, fencestore.ClaimRequest{Worker: "w", Queues: []string{"default"}, Limit: 3})
		require.Len(t, got, 3)
		return err
	})
	at, n, err := s.NextDue()
	require.NoError(t, err)
	require.EqualValues(t, now+1000, at)
	require.EqualValues(t, 4, n, "three leases and one job due at the same millisecond")

	tx(t, db, func() error {
		_, err := s.PutSchedule(now, fencestore.Schedule{Name: "tick", Cron: "* * * * *", Job: []byte(`{"kind":"k"}`),
			NextAt: now + 1000, Owner: fencestore.OwnerTenant})
		return err
	})
	at, n, err = s.NextDue()
	require.NoError(t, err)
	require.EqualValues(t, now+1000, at)
	require.EqualValues(t, 5, n, "and a schedule's tick")
}

// A job that another waits for is marked as waited for, by migration
// 0013's trigger, whatever module records the dependency; a job nobody
// waits for is not.
func TestAWaitedForJobIsMarked(t *testing.T) {
	db := dosqltest.Open(t)
	s := fencestore.New(db, nil)
	var parent, alone int64
	tx(t, db, func() error {
		js, err := s.Enqueue(1, []fencestore.NewJob{job("k"), job("k")})
		if err == nil {
			parent, alone = js[0].ID, js[1].ID
		}
		return err
	})
	dependents := func(id int64) int64 {
		rows, err := db.Query(`SELECT dependents FROM stile_jobs WHERE id = ?`, id)
		require.NoError(t, err)
		require.True(t, rows.Next())
		return rows.Int(0)
	}
	require.EqualValues(t, 0, dependents(parent))
	child := job("k")
	child.Parents = []fencestore.Parent{{ID: parent, Batch: -1}}
	tx(t, db, func() error { _, err := s.Enqueue(2, []fencestore.NewJob{child}); return err })
	require.EqualValues(t, 1, dependents(parent), "the trigger marked the parent")
	require.EqualValues(t, 0, dependents(alone))

	// As an older module records it: a plain insert into the edges.
	tx(t, db, func() error {
		_, err := db.Query(`INSERT INTO stile_job_deps (child_id, parent_id) VALUES (?, ?)`, parent, alone)
		return err
	})
	require.EqualValues(t, 1, dependents(alone))
}
