package retention_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/runtime/internal/retention"
)

const hour = int64(3600_000)

// store is a migrated database with a job store, and shorthands that fail
// the test on an error.
type store struct {
	t  *testing.T
	db *do.DB
	s  *fencestore.Store
}

func newStore(t *testing.T) *store {
	db := dosqltest.Open(t)
	return &store{t: t, db: db, s: fencestore.New(db, nil)}
}

func (s *store) tx(fn func() error) {
	s.t.Helper()
	require.NoError(s.t, s.db.Tx(fn))
}

// enqueue enqueues n jobs at now, to run at runAt, and returns their ids.
func (s *store) enqueue(now, runAt int64, n int) []int64 {
	s.t.Helper()
	js := make([]fencestore.NewJob, n)
	for i := range js {
		js[i] = fencestore.NewJob{Kind: "k", Queue: "default", Args: []byte(`{"n":1}`), RunAt: runAt, MaxAttempts: 3,
			LeaseMs: 30 * hour, TimeoutMs: 30 * hour, BackoffMs: 100, BackoffMaxMs: 1000, Tags: []byte(`[]`)}
	}
	var out []fencestore.Enqueued
	s.tx(func() (err error) { out, err = s.s.Enqueue(now, js); return })
	ids := make([]int64, len(out))
	for i, e := range out {
		ids[i] = e.Job.ID
	}
	return ids
}

// completeReady claims every ready job at now and reports each completed
// at done.
func (s *store) completeReady(now, done int64) {
	s.t.Helper()
	var claimed []fencestore.Job
	s.tx(func() (err error) {
		claimed, _, err = s.s.Claim(now, fencestore.ClaimRequest{Worker: "w", Queues: []string{"default"}, Limit: 100})
		return
	})
	for _, j := range claimed {
		s.tx(func() error {
			_, err := s.s.Report(done, j.ID, fencestore.Report{Claim: fence.Claim{Worker: j.Worker, Attempt: j.Attempt, Token: j.LeaseToken},
				Report: fence.Report{Outcome: fence.OutcomeCompleted}}, 0)
			return err
		})
	}
}

// kind reads GET /storage's figures for one kind, in a transaction (the
// events' count moves its checkpoint).
func (s *store) kind(name string) api.StorageKind {
	s.t.Helper()
	var kinds []api.StorageKind
	s.tx(func() (err error) { kinds, err = retention.Counts(s.db); return })
	for _, k := range kinds {
		if k.Kind == name {
			return k
		}
	}
	s.t.Fatalf("no %s kind in GET /storage", name)
	return api.StorageKind{}
}

func (s *store) ids(sql string) []int64 {
	s.t.Helper()
	rows, err := s.db.Query(sql)
	require.NoError(s.t, err)
	var out []int64
	for rows.Next() {
		out = append(out, rows.Int(0))
	}
	require.NoError(s.t, rows.Err())
	return out
}

// Completed jobs have no index by end time: retention finds them in id
// order among the jobs created by its cutoff, deletes those whose window
// ran out, and leaves the live ones and the ones that finished later,
// whatever their ids.
func TestPurgeFindsCompletedJobsByIDAmongLiveOnes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	p := api.DefaultRetention // completed: a day
	day := p.CompletedMs

	later := s.enqueue(0, 30*day, 3) // scheduled far ahead: live, oldest ids
	s.enqueue(1*hour, 1*hour, 2)
	s.completeReady(1*hour, 2*hour) // completed at 2h
	slow := s.enqueue(3*hour, 3*hour, 1)
	var claimed []fencestore.Job
	s.tx(func() (err error) {
		claimed, _, err = s.s.Claim(3*hour, fencestore.ClaimRequest{Worker: "w", Queues: []string{"default"}, Limit: 1})
		return
	})
	require.Len(t, claimed, 1)
	s.tx(func() error { // created at 3h, completed at 20h
		_, err := s.s.Report(20*hour, slow[0], fencestore.Report{Claim: fence.Claim{Worker: "w", Attempt: 1, Token: claimed[0].LeaseToken},
			Report: fence.Report{Outcome: fence.OutcomeCompleted}}, 0)
		return err
	})
	recent := s.enqueue(10*hour, 10*hour, 2)
	s.completeReady(10*hour, 11*hour)

	created, err := retention.CreatedBy(s.db, 5*hour)
	require.NoError(t, err)
	require.Equal(t, slow[0], created, "the last job created by 5h")

	// At 26h the cutoff is 2h: the two completed at 2h go; the one created
	// at 3h and completed at 20h stays, and so do the live ones.
	var res retention.Result
	s.tx(func() (err error) { res, err = retention.Purge(s.db, p, day+2*hour); return })
	require.Equal(t, 2, res.Deleted[retention.Completed])
	require.False(t, res.Full)
	left := s.ids(`SELECT id FROM stile_jobs ORDER BY id`)
	require.Equal(t, append(append(later, slow...), recent...), left)

	// ReadOldest reads the earliest end among the completed jobs (the
	// recent ones, 11h, though the slow one's id comes first).
	o, err := retention.ReadOldest(s.db, retention.OldestScan)
	require.NoError(t, err)
	require.Equal(t, 11*hour, o[retention.Completed])

	s.tx(func() (err error) { res, err = retention.Purge(s.db, p, day+11*hour-1); return })
	require.Zero(t, res.Deleted[retention.Completed], "a day less a millisecond after the recent ones completed")
	s.tx(func() (err error) { res, err = retention.Purge(s.db, p, day+11*hour); return })
	require.Equal(t, 2, res.Deleted[retention.Completed], "the recent ones, a day after they completed, past the slow one's id")
	require.Equal(t, append(later, slow...), s.ids(`SELECT id FROM stile_jobs ORDER BY id`))
	s.tx(func() (err error) { res, err = retention.Purge(s.db, p, day+20*hour); return })
	require.Equal(t, 1, res.Deleted[retention.Completed], "the slow job, a day after it completed")
	require.Equal(t, later, s.ids(`SELECT id FROM stile_jobs ORDER BY id`), "only the live jobs are left")

	o, err = retention.ReadOldest(s.db, retention.OldestScan)
	require.NoError(t, err)
	require.Zero(t, o[retention.Completed], "no completed job among all the jobs: none to look for")
}

// ReadOldest reads a bounded number of jobs: when none of the first it
// reads completed, the last one's creation is the bound (every completed
// job after it was created, so finished, no sooner).
func TestReadOldestReadsABoundedNumberOfJobs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i := range int64(11) { // 1,100 live jobs, created one a millisecond apart in 11 batches
		s.enqueue(i, 1_000_000, 100)
	}
	s.enqueue(50, 50, 1)
	s.completeReady(60, 70)
	o, err := retention.ReadOldest(s.db, retention.OldestScan)
	require.NoError(t, err)
	require.Equal(t, int64(10), o[retention.Completed], "the creation of the 1,024th job, before the completed one's end")
	o, err = retention.ReadOldest(s.db, retention.OldestScanLook)
	require.NoError(t, err)
	require.Equal(t, int64(70), o[retention.Completed], "after a look, past the live ones: the completed job's end")

	// With no completed job at all, after a look nothing is planned for
	// completed jobs, however many live ones there are: an idle tenant
	// with jobs scheduled far ahead is not woken every slack.
	s.tx(func() error { return s.db.Exec(`DELETE FROM stile_jobs WHERE state = 'completed'`) })
	o, err = retention.ReadOldest(s.db, retention.OldestScanLook)
	require.NoError(t, err)
	require.Zero(t, o[retention.Completed])
	require.Zero(t, retention.Next(api.DefaultRetention, o, false, 100), "no look planned")
}

// GET /storage counts jobs by reading them: rows and estimated bytes move
// with every insert, outcome and delete, with no counter to keep.
func TestCountsCountJobsWhenAsked(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	jobs := func() api.StorageKind { return s.kind("jobs") }
	require.Equal(t, api.StorageKind{Kind: "jobs"}, jobs())
	ids := s.enqueue(0, 0, 2)
	one := jobs()
	require.Equal(t, int64(2), one.Rows)
	require.Equal(t, int64(2*(160+len("k")+len("default")+len(`{"n":1}`)+len("[]"))), one.Bytes)
	s.completeReady(1, 2)
	require.Greater(t, jobs().Bytes, one.Bytes, "the ended attempt's worker and token count")
	s.tx(func() error { return s.s.Delete(ids[0]) })
	require.Equal(t, int64(1), jobs().Rows)

	kinds, err := retention.Counts(s.db)
	require.NoError(t, err)
	for i := 1; i < len(kinds); i++ {
		require.Less(t, kinds[i-1].Kind, kinds[i].Kind, "kinds in order, each once")
	}
}

// Deliveries are counted as asked too, each as its estimate.
func TestCountsCountDeliveriesWhenAsked(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	deliveries := func() api.StorageKind { return s.kind("deliveries") }
	require.Equal(t, api.StorageKind{Kind: "deliveries"}, deliveries())
	s.tx(func() error {
		return s.db.Exec(`INSERT INTO stile_inbox (handler, seq, state, claim_id, worker, attempt, claimed_at, lease_until)
			VALUES ('react', 1, 'pending', 'c1', 'w', 1, 0, 1000)`)
	})
	require.Equal(t, api.StorageKind{Kind: "deliveries", Rows: 1, Bytes: int64(96 + len("react") + len("c1") + len("w"))}, deliveries())
	s.tx(func() error { return s.db.Exec(`UPDATE stile_inbox SET error = 'boom'`) })
	require.Equal(t, int64(96+len("react")+len("c1")+len("w")+len("boom")), deliveries().Bytes)
	s.tx(func() error { return s.db.Exec(`DELETE FROM stile_inbox`) })
	require.Equal(t, api.StorageKind{Kind: "deliveries"}, deliveries())
}

// The events' count is a checkpoint brought up to the log's end when
// asked: it reads the events appended since, and starts over when the log
// was emptied.
func TestCountsBringTheEventsCheckpointToTheLogsEnd(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	size := func(stream, data string) int64 { return int64(64 + 2*len(stream) + 2*len("noted") + len(data)) }
	appendEvent := func(seq int64, stream, data string) {
		s.tx(func() error {
			return s.db.Exec(`INSERT INTO stile_events (seq, stream, version, type, data, at) VALUES (?, ?, ?, 'noted', ?, 0)`,
				seq, stream, seq, data)
		})
	}
	events := func() api.StorageKind { return s.kind("events") }
	checkpoint := func() (rows, bytes int64) {
		t.Helper()
		r, err := s.db.Query(`SELECT rows, bytes FROM stile_storage WHERE kind = 'events'`)
		require.NoError(t, err)
		require.True(t, r.Next())
		return r.Int(0), r.Int(1)
	}

	require.Equal(t, api.StorageKind{Kind: "events"}, events())
	appendEvent(1, "s", `{"a":1}`)
	appendEvent(2, "s", `{}`)
	require.Equal(t, api.StorageKind{Kind: "events", Rows: 2, Bytes: size("s", `{"a":1}`) + size("s", `{}`)}, events())
	rows, bytes := checkpoint()
	require.Equal(t, []int64{2, size("s", `{"a":1}`) + size("s", `{}`)}, []int64{rows, bytes}, "the checkpoint is kept")

	// An event changed behind the checkpoint is not read again: only what
	// was appended since is.
	s.tx(func() error { return s.db.Exec(`UPDATE stile_events SET data = '{"a":1000000}' WHERE seq = 1`) })
	appendEvent(3, "stream", `[]`)
	require.Equal(t, api.StorageKind{Kind: "events", Rows: 3, Bytes: bytes + size("stream", `[]`)}, events())

	// An emptied log is counted from its start: said so by the import
	// (ForgetEvents), or found shorter than the checkpoint.
	s.tx(func() error { return s.db.Exec(`DELETE FROM stile_events`) })
	appendEvent(1, "s", `{}`)
	require.Equal(t, api.StorageKind{Kind: "events", Rows: 1, Bytes: size("s", `{}`)}, events())
	s.tx(func() error { return s.db.Exec(`DELETE FROM stile_events`) })
	s.tx(func() error { return retention.ForgetEvents(s.db) })
	appendEvent(1, "s", `{"b":2}`)
	appendEvent(2, "s", `{}`)
	require.Equal(t, api.StorageKind{Kind: "events", Rows: 2, Bytes: size("s", `{"b":2}`) + size("s", `{}`)}, events())
}
