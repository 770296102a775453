package fencestore

import (
	"slices"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/budget"
)

// ListFilter selects jobs to list.
type ListFilter struct {
	State, Queue, Kind string // "" for any
	After              int64  // list ids after this one
	Limit              int
	// MaxBytes, if not 0, stops the page at that many bytes of jobs
	// (jobBytes): at least one goes.
	MaxBytes int64

	// A search: the jobs whose args or output hold these values, that
	// carry Tag, whose last error contains ErrorText (case aside). No index
	// holds args, output, tags or errors: a search reads at most
	// api.MaxSearchScan jobs of the ranges above per page, and Scanned
	// says how far it read (the next page starts after it).
	Matches   []Match
	Tag       string
	ErrorText string
}

// Match is one condition of a search: the JSON value at Path (a JSON path,
// "$.customer.id") of the job's Column ("args" or "output") is Value (JSON
// text); a JSON null matches a path that is absent too. With Contains,
// Value is a JSON object the column contains: each of its values (arrays
// whole) is at the same path of the column.
type Match struct {
	Column, Path, Value string
	Contains            bool
}

// searching reports whether f is a search.
func (f ListFilter) searching() bool {
	return len(f.Matches) > 0 || f.Tag != "" || f.ErrorText != ""
}

// listed is stile_jobs_listed's condition, written into the statements
// that read it: SQLite uses a partial index only for a statement that
// states its condition. The states on a job's usual path are left out
// (available, running, completed): an entry costs a row written at each
// move into the state.
const listed = "state IN ('pending', 'scheduled', 'retryable', 'cancelled', 'dead')"

// List reads jobs in id order, after f.After. A state filter reads an
// index where the state has one: the lease index for running jobs (there
// are only as many as workers run), the ready indexes for available ones
// (the backlog, sorted), stile_jobs_listed for the states off the usual
// path; completed jobs are read in id order from the table, passing over
// the others. Queue and kind filter the rows found. cut says f.MaxBytes
// stopped the page short of f.Limit.
func (s *Store) List(f ListFilter) (jobs []Job, cut bool, err error) {
	jobs, cut, _, err = s.Search(f)
	return jobs, cut, err
}

// Search is List with f's search conditions: it reads at most
// api.MaxSearchScan jobs of the ranges List reads, in id order, and
// returns those that match; scanned is the last id it read when it read
// that many (0: it read every job the ranges hold after f.After), where a
// next page starts.
func (s *Store) Search(f ListFilter) (jobs []Job, cut bool, scanned int64, err error) {
	from, where := "stile_jobs", []string{"id > ?"}
	args := []any{f.After}
	var searchWindow string // a search's window of jobs read, and its arguments
	var windowArgs []any
	// The state is written into the text, as a literal of the closed set:
	// SQLite plans a bound one anew at each run, since a partial index's
	// use depends on it.
	switch st := fence.State(f.State); {
	case f.State == "":
	case !st.Valid():
		return nil, false, 0, printf.Errorf("list jobs: no state %q", f.State)
	case st == fence.StateRunning:
		from, where = "stile_jobs INDEXED BY stile_jobs_lease", append(where, "state = 'running'")
	case st == fence.StateAvailable:
		from = readyAll
	case st == fence.StateCompleted:
		where = append(where, "state = 'completed'")
	default:
		where = append(where, "state = '"+f.State+"'", listed)
	}
	for _, c := range []struct{ col, v string }{{"queue", f.Queue}, {"kind", f.Kind}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.searching() {
		// The window a page reads: the first MaxSearchScan jobs of the
		// ranges, in id order; the conditions are tested on those only.
		from = `(SELECT * FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id` + do.Limit(api.MaxSearchScan) + `)`
		window := len(args)
		where = []string{"1"}
		for _, m := range f.Matches {
			if m.Contains {
				// No leaf of the object (outside arrays, which compare
				// whole) differs from the column's at its path.
				where = append(where, `NOT EXISTS (SELECT 1 FROM json_tree(?) w WHERE w.type <> 'object' AND instr(w.fullkey, '[') = 0
					AND json_extract(`+m.Column+`, w.fullkey) IS NOT (CASE w.type WHEN 'array' THEN json(w.value) ELSE w.value END))`)
				args = append(args, m.Value)
				continue
			}
			where = append(where, "json_extract("+m.Column+", ?) IS json_extract(?, '$')")
			args = append(args, m.Path, m.Value)
		}
		if f.Tag != "" {
			where = append(where, "EXISTS (SELECT 1 FROM json_each(tags) WHERE value = ?)")
			args = append(args, f.Tag)
		}
		if f.ErrorText != "" {
			where = append(where, "instr(lower(last_error), lower(?)) > 0")
			args = append(args, f.ErrorText)
		}
		searchWindow, windowArgs = from, args[:window]
	}
	page := func(cols string, limit int) (string, []any) {
		return `SELECT ` + cols + ` FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY id` + do.Limit(limit), args
	}
	limit, cut, err := budget.Limit(s.db, f.MaxBytes, f.Limit, jobBytes, page)
	if err != nil {
		return nil, false, 0, printf.Errorf("list jobs: %w", err)
	}
	sql, sqlArgs := page(jobColumns, limit)
	rows, err := s.db.Query(sql, sqlArgs...)
	if err != nil {
		return nil, false, 0, printf.Errorf("list jobs: %w", err)
	}
	var out []Job
	for rows.Next() {
		out = append(out, s.scanJob(rows))
	}
	if err := rows.Err(); err != nil || searchWindow == "" || len(out) == limit || cut {
		return out, cut, 0, err
	}
	// A search page short of its limit: whether it read all the window
	// may, and so where the next page starts.
	rows, err = s.db.Query(`SELECT count(*), coalesce(max(id), 0) FROM `+searchWindow, windowArgs...)
	if err != nil {
		return nil, false, 0, printf.Errorf("search jobs: %w", err)
	}
	if rows.Next() && rows.Int(0) == api.MaxSearchScan {
		scanned = rows.Int(1)
	}
	return out, cut, scanned, rows.Err()
}

// QueueCount is how many jobs of a queue are in a state.
type QueueCount struct {
	Queue, State string
	Count        int64
}

// Counts counts the jobs not finished yet, per queue and state, and the
// finished ones per state. Counts are taken when asked, from the indexes
// each state already has, rather than kept up to date by every write: a
// job's every move would pay for them (measured: a quarter of the job
// cycle), and they are read rarely. The cost is a read of the counted
// jobs' index entries, and for completed jobs, which have none, of every
// job.
func (s *Store) Counts() ([]QueueCount, map[string]int64, error) {
	rows, err := s.db.Query(`SELECT queue, state, sum(n) FROM (
		SELECT queue, 'available' AS state, count(*) AS n FROM stile_jobs WHERE ` + readyPlain + ` GROUP BY queue
		UNION ALL SELECT queue, 'available', count(*) FROM stile_jobs WHERE ` + readyKeyed + ` GROUP BY queue
		UNION ALL SELECT queue, 'available', count(*) FROM stile_jobs WHERE ` + readyRated + ` GROUP BY queue
		UNION ALL SELECT queue, 'running', count(*) FROM stile_jobs WHERE state = 'running' GROUP BY queue
		UNION ALL SELECT queue, state, count(*) FROM stile_jobs
			WHERE ` + listed + ` AND state IN ('pending', 'scheduled', 'retryable') GROUP BY queue, state
		) GROUP BY queue, state ORDER BY queue, state`)
	if err != nil {
		return nil, nil, printf.Errorf("count jobs: %w", err)
	}
	var live []QueueCount
	for rows.Next() {
		live = append(live, QueueCount{Queue: rows.Text(0), State: rows.Text(1), Count: rows.Int(2)})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	rows, err = s.db.Query(`SELECT state, count(*) FROM stile_jobs
		WHERE ` + listed + ` AND state IN ('cancelled', 'dead') GROUP BY state
		UNION ALL SELECT 'completed', count(*) FROM stile_jobs WHERE state = 'completed' HAVING count(*) > 0`)
	if err != nil {
		return nil, nil, printf.Errorf("count finished jobs: %w", err)
	}
	done := map[string]int64{}
	for rows.Next() {
		done[rows.Text(0)] = rows.Int(1)
	}
	return live, done, rows.Err()
}

// Limit is a concurrency limit.
type Limit struct {
	Key   string
	Slots int64
	InUse int64
}

// SetLimit sets how many jobs of key may run at once. Lowering it below
// the jobs running now stops new claims until enough of them finished.
func (s *Store) SetLimit(now int64, key string, slots int64) (Limit, error) {
	rows, err := s.db.Query(`INSERT INTO stile_concurrency (key, slots, in_use, updated_at) VALUES (?1, ?2, 0, ?3)
		ON CONFLICT (key) DO UPDATE SET slots = ?2, updated_at = ?3 RETURNING key, slots, in_use`, key, slots, now)
	if err != nil {
		return Limit{}, printf.Errorf("set the limit of %q: %w", key, err)
	}
	if !rows.Next() {
		return Limit{}, printf.Errorf("set the limit of %q: %w", key, do.ErrGuard)
	}
	s.wakeAll() // a raised limit may let waiting jobs run
	return Limit{Key: rows.Text(0), Slots: rows.Int(1), InUse: rows.Int(2)}, nil
}

// ListLimits reads every concurrency limit.
func (s *Store) ListLimits() ([]Limit, error) {
	rows, err := s.db.Query(`SELECT key, slots, in_use FROM stile_concurrency ORDER BY key`)
	if err != nil {
		return nil, printf.Errorf("read concurrency limits: %w", err)
	}
	var out []Limit
	for rows.Next() {
		out = append(out, Limit{Key: rows.Text(0), Slots: rows.Int(1), InUse: rows.Int(2)})
	}
	return out, rows.Err()
}

// ensureLimit makes sure key has a limit: the tenant's, else the module's
// default, else the enqueue is refused.
func (s *Store) ensureLimit(now int64, key string) error {
	rows, err := s.db.Query(`SELECT 1 FROM stile_concurrency WHERE key = ?`, key)
	if err != nil {
		return printf.Errorf("read the limit of %q: %w", key, err)
	}
	if rows.Next() {
		return nil
	}
	slots, ok := s.Limits[key]
	if !ok {
		return api.Refuse(api.CodeInvalidRequest, "concurrency key %q has no limit: set one with PUT /v1/t/{tenant}/concurrency/%s or register it in the module", key, key)
	}
	_, err = s.SetLimit(now, key, int64(slots))
	return err
}

type freeSlot struct {
	key  string
	free int
}

// freeSlots lists keys with room, least recently used first.
func (s *Store) freeSlots() ([]freeSlot, error) {
	rows, err := s.db.Query(`SELECT key, slots - in_use FROM stile_concurrency WHERE in_use < slots
		ORDER BY updated_at` + do.Limit(MaxKeysPerClaim))
	if err != nil {
		return nil, printf.Errorf("read free concurrency slots: %w", err)
	}
	var out []freeSlot
	for rows.Next() {
		out = append(out, freeSlot{key: s.intern(rows.TextBytes(0)), free: int(rows.Int(1))})
	}
	return out, rows.Err()
}

// ReadyCount is how many jobs of one kind in one queue a claim could take.
type ReadyCount struct {
	Queue, Kind string
	Count       int64
}

// Ready counts the jobs a claim could take now, by queue and kind, up to
// limit jobs of each of the two ready indexes: what a push tells an
// executor (api.Push), and what GET /queues checks against the kinds
// executors claim. Jobs of a paused queue, of a full concurrency key and
// of a rate key without room are not ready: no claim takes them; a rate
// key counts no more jobs than it has room for now. Its cost is bounded by
// the ready jobs it counts, never by the jobs a tenant keeps: it reads the
// queues with ready jobs one seek each, then ranges of the ready indexes.
func (s *Store) Ready(now int64, limit int) (total int64, counts []ReadyCount, err error) {
	paused, err := s.PausedQueues()
	if err != nil {
		return 0, nil, err
	}
	queues, err := s.readyQueues(paused, readyPlain)
	if err != nil {
		return 0, nil, err
	}
	args := make([]any, len(queues))
	for i, q := range queues {
		args[i] = q
	}
	count := func(sql string, args ...any) error {
		rows, err := s.db.Query(sql, args...)
		if err != nil {
			return printf.Errorf("count ready jobs: %w", err)
		}
		for rows.Next() {
			q, k := s.intern(rows.TextBytes(0)), s.intern(rows.TextBytes(1))
			if paused[q] {
				continue
			}
			total++
			i := slices.IndexFunc(counts, func(c ReadyCount) bool { return c.Queue == q && c.Kind == k })
			if i < 0 {
				counts = append(counts, ReadyCount{Queue: q, Kind: k})
				i = len(counts) - 1
			}
			counts[i].Count++
		}
		return rows.Err()
	}
	if len(args) > 0 {
		if err := count(`SELECT queue, kind FROM stile_jobs WHERE `+readyPlain+`
			AND queue IN (?`+strings.Repeat(", ?", len(args)-1)+`)`+do.Limit(limit), args...); err != nil {
			return 0, nil, err
		}
	}
	// Keyed jobs of paused queues are passed over in SQL, before the limit
	// (a paused queue's keyed jobs are read to be passed over: paused
	// queues with jobs under free keys are rare).
	if err := count(`SELECT queue, kind FROM stile_jobs WHERE ` + readyKeyed + `
		AND concurrency_key IN (SELECT key FROM stile_concurrency WHERE in_use < slots)
		AND queue NOT IN (SELECT name FROM stile_queues WHERE paused = 1)` + do.Limit(limit)); err != nil {
		return 0, nil, err
	}
	// Rated jobs, key by key, as many as each key has room for.
	rates, err := s.openRates(now)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range rates {
		if err := count(`SELECT queue, kind FROM stile_jobs WHERE `+readyRated+` AND rate_key = ?
			AND (concurrency_key IS NULL OR concurrency_key IN (SELECT key FROM stile_concurrency WHERE in_use < slots))
			AND queue NOT IN (SELECT name FROM stile_queues WHERE paused = 1)`+do.Limit(int(min(int64(limit), r.room))), r.Key); err != nil {
			return 0, nil, err
		}
	}
	slices.SortFunc(counts, func(a, b ReadyCount) int {
		if c := strings.Compare(a.Queue, b.Queue); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return total, counts, nil
}

// OldestReady is, per queue, when its oldest ready job became due (its
// run_at): how long the queue's backlog has waited.
func (s *Store) OldestReady() (map[string]int64, error) {
	rows, err := s.db.Query(`SELECT queue, MIN(run_at) FROM ` + readyAll + ` GROUP BY queue`)
	if err != nil {
		return nil, printf.Errorf("read the oldest ready jobs: %w", err)
	}
	out := map[string]int64{}
	for rows.Next() {
		out[rows.Text(0)] = rows.Int(1)
	}
	return out, rows.Err()
}

// FailingJob is a failing job as the failing view reads it.
type FailingJob struct {
	ID          int64
	Kind, State string
	LastError   string
	At          int64 // when it last failed (ended, or finished dead)
}

// Failing reads the newest jobs retrying or dead, up to max of each state,
// along stile_jobs_listed: what GET /failing groups. more says a state had
// more than max.
func (s *Store) Failing(max int) (jobs []FailingJob, more bool, err error) {
	for _, state := range []string{"retryable", "dead"} {
		rows, err := s.db.Query(`SELECT id, kind, state, coalesce(last_error, ''), coalesce(finished_at, ended_at, created_at)
			FROM stile_jobs WHERE ` + listed + ` AND state = '` + state + `' ORDER BY id DESC` + do.Limit(max+1))
		if err != nil {
			return nil, false, printf.Errorf("read failing jobs: %w", err)
		}
		n := 0
		for rows.Next() {
			if n++; n > max {
				more = true
				break
			}
			jobs = append(jobs, FailingJob{ID: rows.Int(0), Kind: s.intern(rows.TextBytes(1)), State: s.intern(rows.TextBytes(2)),
				LastError: rows.Text(3), At: rows.Int(4)})
		}
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
	}
	return jobs, more, nil
}

// KindCount is how many jobs of a kind are in a state.
type KindCount struct {
	Kind, State string
	Count       int64
}

// CountsByKind counts every job per kind and state (GET /metrics). The
// kind is in no index: it reads each job once.
func (s *Store) CountsByKind() ([]KindCount, error) {
	rows, err := s.db.Query(`SELECT kind, state, count(*) FROM stile_jobs GROUP BY kind, state ORDER BY kind, state`)
	if err != nil {
		return nil, printf.Errorf("count jobs by kind: %w", err)
	}
	var out []KindCount
	for rows.Next() {
		out = append(out, KindCount{Kind: rows.Text(0), State: rows.Text(1), Count: rows.Int(2)})
	}
	return out, rows.Err()
}
