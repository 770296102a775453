package retention

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// Result is what one look deleted, per kind, and whether any kind had
// more than a slice to delete.
type Result struct {
	Deleted [kinds]int
	Full    bool
}

// jobStates are written into the purge statement as literals: SQLite plans
// a statement anew at each run when a partial index's use hangs on a bound
// value.
var jobStates = [...]string{Completed: "completed", Cancelled: "cancelled", Dead: "dead"}

// Purge deletes, in the caller's transaction, at most Slice rows of each
// kind whose retention ran out at now. A finished job goes with its
// attempts, refused reports and dependency edges (cascades), but not
// while one of its dependents is unfinished, nor before the unique window
// it was enqueued with has passed.
func Purge(db *do.DB, p api.Retention, now int64) (Result, error) {
	var res Result
	for k := Completed; k <= Dead; k++ {
		cutoff, ok := Cutoff(p, k, now)
		if !ok {
			continue
		}
		n, err := count(db, `DELETE FROM stile_jobs WHERE id IN (
			SELECT j.id FROM stile_jobs j WHERE j.state = '`+jobStates[k]+`' AND j.finished_at IS NOT NULL AND j.finished_at <= ?
			AND (j.unique_key IS NULL OR j.created_at + j.unique_window_ms <= ?)
			AND NOT EXISTS (SELECT 1 FROM stile_job_deps d JOIN stile_jobs c ON c.id = d.child_id
				WHERE d.parent_id = j.id AND c.finished_at IS NULL)
			ORDER BY j.finished_at`+do.Limit(Slice)+`) RETURNING 1`, cutoff, now)
		if err != nil {
			return res, printf.Errorf("delete %s jobs finished before %d: %w", jobStates[k], cutoff, err)
		}
		res.add(k, n)
	}
	if cutoff, ok := Cutoff(p, Deliveries, now); ok {
		n, err := count(db, `DELETE FROM stile_inbox WHERE (handler, seq) IN (
			SELECT handler, seq FROM stile_inbox WHERE settled_at IS NOT NULL AND settled_at <= ?
			ORDER BY settled_at`+do.Limit(Slice)+`) RETURNING 1`, cutoff)
		if err != nil {
			return res, printf.Errorf("delete deliveries settled before %d: %w", cutoff, err)
		}
		res.add(Deliveries, n)
	}
	if cutoff, ok := Cutoff(p, Commands, now); ok {
		n, err := count(db, `DELETE FROM stile_commands WHERE id IN (
			SELECT id FROM stile_commands WHERE at <= ? ORDER BY at`+do.Limit(Slice)+`) RETURNING 1`, cutoff)
		if err != nil {
			return res, printf.Errorf("delete commands applied before %d: %w", cutoff, err)
		}
		m, err := count(db, `DELETE FROM stile_scheduled_commands WHERE id IN (
			SELECT id FROM stile_scheduled_commands WHERE done_at IS NOT NULL AND done_at <= ?
			ORDER BY done_at`+do.Limit(Slice)+`) RETURNING 1`, cutoff)
		if err != nil {
			return res, printf.Errorf("delete scheduled commands fired before %d: %w", cutoff, err)
		}
		res.add(Commands, n)
		res.Full = res.Full || m == Slice
		res.Deleted[Commands] += m
	}
	if cutoff, ok := Cutoff(p, Audit, now); ok {
		n, err := count(db, `DELETE FROM stile_audit WHERE id IN (
			SELECT id FROM stile_audit WHERE at <= ? ORDER BY at`+do.Limit(Slice)+`) RETURNING 1`, cutoff)
		if err != nil {
			return res, printf.Errorf("delete audit entries before %d: %w", cutoff, err)
		}
		res.add(Audit, n)
	}
	return res, nil
}

func (r *Result) add(k Kind, n int) {
	r.Deleted[k] += n
	r.Full = r.Full || n == Slice
}

// ReadOldest reads each kind's oldest end time, in one statement.
func ReadOldest(db *do.DB) (Oldest, error) {
	var o Oldest
	rows, err := db.Query(`SELECT
		(SELECT MIN(finished_at) FROM stile_jobs WHERE state = 'completed' AND finished_at IS NOT NULL),
		(SELECT MIN(finished_at) FROM stile_jobs WHERE state = 'cancelled' AND finished_at IS NOT NULL),
		(SELECT MIN(finished_at) FROM stile_jobs WHERE state = 'dead' AND finished_at IS NOT NULL),
		(SELECT MIN(settled_at) FROM stile_inbox WHERE settled_at IS NOT NULL),
		(SELECT MIN(at) FROM stile_commands),
		(SELECT MIN(done_at) FROM stile_scheduled_commands WHERE done_at IS NOT NULL),
		(SELECT MIN(at) FROM stile_audit)`)
	if err != nil {
		return o, printf.Errorf("read the oldest rows retention may delete: %w", err)
	}
	if !rows.Next() {
		return o, rows.Err()
	}
	col := func(i int) int64 {
		if rows.Null(i) {
			return 0
		}
		return rows.Int(i)
	}
	o[Completed], o[Cancelled], o[Dead], o[Deliveries], o[Commands], o[Audit] = col(0), col(1), col(2), col(3), col(4), col(6)
	if sc := col(5); sc != 0 && (o[Commands] == 0 || sc < o[Commands]) {
		o[Commands] = sc
	}
	return o, rows.Err()
}

func count(db *do.DB, sql string, args ...any) (int, error) {
	rows, err := db.Query(sql, args...)
	if err != nil {
		return 0, err
	}
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

// Counts reads the storage counters, in the order they were created.
func Counts(db *do.DB) ([]api.StorageKind, error) {
	rows, err := db.Query(`SELECT kind, rows, bytes FROM stile_storage`)
	if err != nil {
		return nil, printf.Errorf("read the storage counters: %w", err)
	}
	out := []api.StorageKind{}
	for rows.Next() {
		out = append(out, api.StorageKind{Kind: rows.Text(0), Rows: rows.Int(1), Bytes: rows.Int(2)})
	}
	return out, rows.Err()
}
