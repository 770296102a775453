package fencestore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/host/dosql/dosqltest"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// A job's history is whole and in order although its last ended attempt
// lives on the job's row: it moves to the history table when the next
// attempt ends, a stale report moves nothing, a repeated report of the
// last attempt is still known as a duplicate, and history written by a
// module from before (every attempt in the table) reads the same.
func TestHistoryKeepsTheLastAttemptOnTheRow(t *testing.T) {
	t.Parallel()
	f := newJobs(t)
	n := job("k")
	n.MaxAttempts = 3
	j := f.running(n)
	failed := fencestore.Report{Claim: claimOf(j), Report: fence.Report{Outcome: fence.OutcomeFailed}, Error: "down"}
	tx(t, f.db, func() error { _, err := f.s.Report(t0+100, j.ID, failed, 0); return err })
	tableRows := func() int {
		return len(dosqltest.Rows(t, f.db, `SELECT attempt FROM stile_job_attempts WHERE job_id = ?`, j.ID))
	}
	require.Zero(t, tableRows(), "one attempt ended: it is kept on the row")
	require.Equal(t, []int64{1}, attemptNumbers(f.attempts(j.ID)))

	// The same report again is a duplicate, read from the row.
	var res fencestore.ReportResult
	tx(t, f.db, func() (err error) { res, err = f.s.Report(t0+150, j.ID, failed, 0); return })
	require.True(t, res.Duplicate)

	f.due(t0 + 300) // the backoff is over
	second := f.claim(t0+300, "w2", 1)
	require.Len(t, second, 1)
	require.Equal(t, int64(2), second[0].Attempt)

	// A stale report of attempt 1 is refused and moves nothing.
	before := f.snapshot()
	err := f.serve(func() error {
		_, err := f.s.Report(t0+400, j.ID, fencestore.Report{Claim: claimOf(j), Report: fence.Report{Outcome: fence.OutcomeCompleted}}, 0)
		return err
	})
	requireCode(t, err, api.CodeStaleAttempt)
	require.Equal(t, before, f.snapshot())

	completed := fencestore.Report{Claim: claimOf(second[0]), Report: fence.Report{Outcome: fence.OutcomeCompleted}}
	tx(t, f.db, func() error { _, err := f.s.Report(t0+500, j.ID, completed, 0); return err })
	require.Equal(t, 1, tableRows(), "attempt 1 moved to the table when attempt 2 ended")
	as := f.attempts(j.ID)
	require.Equal(t, []int64{1, 2}, attemptNumbers(as))
	require.Equal(t, "failed", as[0].Outcome)
	require.Equal(t, "down", as[0].Error)
	require.Equal(t, "w", as[0].Worker)
	require.Equal(t, "completed", as[1].Outcome)
	require.Equal(t, "w2", as[1].Worker)
	require.Equal(t, "report", as[1].NoticedBy)
	require.Equal(t, t0+500, as[1].EndedAt)

	// As a module from before this layout wrote it: every attempt in the
	// table, none on the row.
	require.NoError(t, f.db.Exec(`INSERT INTO stile_job_attempts (job_id, attempt, worker, lease_token, claimed_at,
		lease_until, ended_at, outcome, error, noticed_by, heartbeats, last_heartbeat_at)
		SELECT id, ended_attempt, ended_worker, ended_token, ended_claimed_at, ended_lease_until, ended_at, ended_outcome,
		ended_error, ended_noticed_by, ended_heartbeats, ended_last_heartbeat_at FROM stile_jobs WHERE id = ?`, j.ID))
	require.NoError(t, f.db.Exec(`UPDATE stile_jobs SET ended_attempt = NULL WHERE id = ?`, j.ID))
	require.Equal(t, as, f.attempts(j.ID))
}

func attemptNumbers(as []fencestore.Attempt) []int64 {
	var out []int64
	for _, a := range as {
		out = append(out, a.Attempt)
	}
	return out
}
