package retention

import (
	"strconv"

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
		// Completed jobs have no index of their own (a job that runs once
		// would pay a row written for it): they are found in id order,
		// among the jobs created at or before the cutoff. Cancelled and
		// dead jobs by stile_jobs_ended, oldest first; the literal term
		// lets SQLite use that partial index.
		bound, order, args := `j.state IN ('cancelled', 'dead')`, "j.finished_at", []any{cutoff, now}
		if k == Completed {
			last, err := CreatedBy(db, cutoff)
			if err != nil {
				return res, err
			}
			bound, order, args = "j.id <= ?", "j.id", []any{last, cutoff, now}
		}
		n, err := count(db, `DELETE FROM stile_jobs WHERE id IN (
			SELECT j.id FROM stile_jobs j WHERE `+bound+` AND j.state = '`+jobStates[k]+`' AND j.finished_at <= ?
			AND (j.unique_key IS NULL OR j.created_at + j.unique_window_ms <= ?)
			AND NOT EXISTS (SELECT 1 FROM stile_job_deps d JOIN stile_jobs c ON c.id = d.child_id
				WHERE d.parent_id = j.id AND c.finished_at IS NULL)
			ORDER BY `+order+do.Limit(Slice)+`) RETURNING 1`, args...)
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

// CreatedBy is the highest job id created at or before t (0: none). Ids
// grow with creation times (SQLite hands out the next id; a tenant's
// clock moves forward), so it bisects the ids, reading one row per step.
// Were a clock to step back, a job would be taken as created later than
// it was: retention would only look at it later.
func CreatedBy(db *do.DB, t int64) (int64, error) {
	probe := func(from int64) (id, created int64, ok bool, err error) {
		rows, err := db.Query(`SELECT id, created_at FROM stile_jobs WHERE id >= ? ORDER BY id LIMIT 1`, from)
		if err != nil {
			return 0, 0, false, printf.Errorf("find the jobs created before %d: %w", t, err)
		}
		if rows.Next() {
			id, created, ok = rows.Int(0), rows.Int(1), true
		}
		return id, created, ok, rows.Err()
	}
	rows, err := db.Query(`SELECT MAX(id) FROM stile_jobs`)
	if err != nil {
		return 0, printf.Errorf("find the jobs created before %d: %w", t, err)
	}
	hi := int64(0)
	if rows.Next() && !rows.Null(0) {
		hi = rows.Int(0)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return bisect(hi, t, probe)
}

// bisect finds the highest id up to hi whose job was created at or before
// t, given probe: the first job at or after an id, and its creation time.
func bisect(hi, t int64, probe func(int64) (int64, int64, bool, error)) (int64, error) {
	lo := int64(0) // 0, or an id created at or before t
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		id, created, ok, err := probe(mid)
		if err != nil {
			return 0, err
		}
		if ok && id <= hi && created <= t {
			lo = id
		} else {
			hi = mid - 1 // none from mid to hi was created by t
		}
	}
	return lo, nil
}

// How many jobs ReadOldest reads, in id order, to find the first
// completed one: a few, where it plans a look without one (a new instance,
// a write, a changed policy); many after a look, which has just read the
// old ones, so that old jobs still live (scheduled far ahead, kept) do not
// hold the bound in the past and bring a look every slack.
const (
	OldestScan     = 1024
	OldestScanLook = 65536
)

// ReadOldest reads each kind's oldest end time, in one statement. For
// completed jobs, which have no index by end time, it reads the first
// scan jobs in id order: the earliest end among the completed ones, and,
// if there may be more jobs, no later than the last one's creation (every
// job after it was created, and so finished, no sooner). A bound from
// below: one too early costs a look that deletes nothing.
func ReadOldest(db *do.DB, scan int) (Oldest, error) {
	// e2e's TrapAfterTheCommitSaysSo injects a fault at this statement by
	// its first line: a change there changes the test's too.
	var o Oldest
	rows, err := db.Query(`SELECT
		(SELECT CASE WHEN COUNT(*) < ` + strconv.Itoa(scan) + ` THEN MIN(finished_at) FILTER (WHERE state = 'completed')
			ELSE MIN(COALESCE(MIN(finished_at) FILTER (WHERE state = 'completed'), MAX(created_at)), MAX(created_at)) END
			FROM (SELECT state, created_at, finished_at FROM stile_jobs ORDER BY id` + do.Limit(scan) + `)),
		(SELECT MIN(finished_at) FROM stile_jobs WHERE state IN ('cancelled', 'dead') AND state = 'cancelled'),
		(SELECT MIN(finished_at) FROM stile_jobs WHERE state IN ('cancelled', 'dead') AND state = 'dead'),
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

// jobBytes estimates a job row's bytes: its text lengths and a fixed cost
// for its integers, keys and index entries (as stile_storage's triggers
// estimate the other kinds').
const jobBytes = `160 + length(kind) + length(queue) + length(args) + length(tags) + COALESCE(length(output), 0)
	+ COALESCE(length(last_error), 0) + COALESCE(length(unique_key), 0) + COALESCE(length(ended_worker), 0)
	+ COALESCE(length(ended_token), 0) + COALESCE(length(ended_error), 0) + COALESCE(length(all_args), 0)
	+ COALESCE(length(rate_key), 0) + COALESCE(length(debounce_key), 0) + COALESCE(length(throttle_key), 0)`

// deliveryBytes estimates a delivery row's bytes, as jobBytes a job's.
const deliveryBytes = `96 + length(handler) + length(claim_id) + length(worker) + COALESCE(length(error), 0)`

// eventBytes estimates an event row's bytes (its key, and its stream and
// type twice: in the row and in an index).
const eventBytes = `64 + 2 * length(stream) + 2 * length(type) + length(data) + COALESCE(length(command_id), 0)`

// Counts reads what the tenant stores per kind, by kind: jobs and
// deliveries counted now, by reading every one (a job cycle and a delivery
// keep no counter: it would cost two rows written each), events from
// their checkpoint (CountEvents), and the counters the other kinds'
// triggers keep. stile_storage's rows for jobs and deliveries stopped at
// migration 17 and are not read.
func Counts(db *do.DB) ([]api.StorageKind, error) {
	if err := CountEvents(db); err != nil {
		return nil, err
	}
	rows, err := db.Query(`SELECT 'jobs', COUNT(*), COALESCE(SUM(` + jobBytes + `), 0) FROM stile_jobs
		UNION ALL SELECT 'deliveries', COUNT(*), COALESCE(SUM(` + deliveryBytes + `), 0) FROM stile_inbox
		UNION ALL SELECT kind, rows, bytes FROM stile_storage WHERE kind NOT IN ('jobs', 'deliveries') ORDER BY 1`)
	if err != nil {
		return nil, printf.Errorf("read the storage counters: %w", err)
	}
	out := []api.StorageKind{}
	for rows.Next() {
		out = append(out, api.StorageKind{Kind: rows.Text(0), Rows: rows.Int(1), Bytes: rows.Int(2)})
	}
	return out, rows.Err()
}

// CountEvents brings the events' checkpoint in stile_storage up to the
// log's end: it holds the events counted so far, through seq = rows (the
// log is append-only and its seq gapless from 1), and their bytes; the
// events appended since are read and added, in the caller's transaction
// (a row written, only when the log grew). A log shorter than the
// checkpoint was emptied (an import's first page or its abort) and is
// counted again from its start.
func CountEvents(db *do.DB) error {
	rows, err := db.Query(`SELECT s.rows, s.bytes, (SELECT COALESCE(MAX(seq), 0) FROM stile_events)
		FROM stile_storage s WHERE s.kind = 'events'`)
	if err != nil {
		return printf.Errorf("read the events' count: %w", err)
	}
	if !rows.Next() {
		return printf.Errorf("read the events' count: no checkpoint in stile_storage: %w", rows.Err())
	}
	counted, bytes, last := rows.Int(0), rows.Int(1), rows.Int(2)
	if err := rows.Err(); err != nil {
		return err
	}
	if last == counted {
		return nil
	}
	if last < counted {
		counted, bytes = 0, 0
	}
	if err := db.Exec(`UPDATE stile_storage SET rows = ?1 + (SELECT COUNT(*) FROM stile_events WHERE seq > ?1),
		bytes = ?2 + (SELECT COALESCE(SUM(`+eventBytes+`), 0) FROM stile_events WHERE seq > ?1) WHERE kind = 'events'`, counted, bytes); err != nil {
		return printf.Errorf("count the events appended since %d: %w", counted, err)
	}
	return nil
}

// ForgetEvents sets the events' checkpoint back to none, in the caller's
// transaction: whoever empties the log says so (an import clearing it),
// lest a log that grew back past the checkpoint be counted by its bytes.
func ForgetEvents(db *do.DB) error {
	if err := db.Exec(`UPDATE stile_storage SET rows = 0, bytes = 0 WHERE kind = 'events'`); err != nil {
		return printf.Errorf("forget the events' count: %w", err)
	}
	return nil
}
