package fencestore

import (
	"errors"
	"slices"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/printf"
)

// Store reads and writes jobs in a tenant's SQLite database. Its methods
// expect to run inside the request's transaction; they read state, ask
// package fence what to do, and persist that decision with writes guarded
// so that "0 rows" means the state moved underneath them.
type Store struct {
	db      *do.DB
	due     DueTracker
	strings map[string]string
	buf     []byte // reused for JSON parameters

	// Limits are the module's default concurrency limits, by key.
	Limits map[string]int
	// Rates are the module's default rate limits, by key.
	Rates map[string]flow.Rate
	// ratesKnown says whether the tenant has rate keys: 0 not known, 1
	// none (a claim reads none), 2 some. A rolled-back write leaves it at
	// worst at "some", which costs a read, never a start.
	ratesKnown int8

	woke Wake
	// failing says writes since the last FailingChanged may have changed
	// what is failing (a job became or stopped being retryable or dead).
	failing bool
	// Watched says the tenant has watchers: only then are changes kept.
	Watched bool
	// changes are the jobs the writes changed, for watchers (Changes).
	changes     []Change
	changesMore bool
	// paused caches the paused queues (nil: read them again).
	paused map[string]bool
	// queues are queue names known to count against MaxQueues (nil: not
	// read yet); it may hold names no longer counted (finished, rolled
	// back), so a new name beyond the bound reads them again.
	queues map[string]struct{}
	// MaxQueues bounds the tenant's distinct queue names (api.MaxQueues
	// when 0).
	MaxQueues int
	// Traceparent is the current request's W3C traceparent ("": none),
	// stored with every job it enqueues (the runtime sets it per request).
	Traceparent string
}

// DueTracker learns how the store's writes move due times (run_at of
// waiting jobs, lease deadlines of running ones, schedule ticks), so the
// tenant can keep its alarm without re-reading the minimum after every
// request.
type DueTracker interface {
	// Added: something is now due at at.
	Added(at int64)
	// Removed: something due at at no longer is.
	Removed(at int64)
	// Unknown: many things changed; re-read the minimum.
	Unknown()
}

// NoTracker is the DueTracker of a store whose due times nobody tracks.
var NoTracker DueTracker = noTracker{}

type noTracker struct{}

func (noTracker) Added(int64)   {}
func (noTracker) Removed(int64) {}
func (noTracker) Unknown()      {}

// New returns a store over db; due may be nil.
func New(db *do.DB, due DueTracker) *Store {
	if due == nil {
		due = NoTracker
	}
	return &Store{db: db, due: due, strings: map[string]string{}}
}

// Wake says whether writes may have made jobs claimable, and for which
// held claims: those claiming one of Queues (or every queue) and, unless
// AnyKind, one of Kinds (or every kind). All: the writes do not say which
// queues or kinds, so every held claim should look again.
type Wake struct {
	Any, All, AnyKind bool
	Queues, Kinds     []string
}

// maxWakeNames bounds the queues and kinds a Wake lists; more wake every
// held claim.
const maxWakeNames = 16

// wake notes that a job of kind in queue may be claimable ("" kind: any
// kind of the queue).
func (s *Store) wake(queue, kind string) {
	w := &s.woke
	w.Any = true
	if w.All {
		return
	}
	if !slices.Contains(w.Queues, queue) {
		w.Queues = append(w.Queues, queue)
	}
	if kind == "" {
		w.AnyKind = true
	} else if !w.AnyKind && !slices.Contains(w.Kinds, kind) {
		w.Kinds = append(w.Kinds, kind)
	}
	if len(w.Queues) > maxWakeNames || len(w.Kinds) > maxWakeNames {
		s.wakeAll()
	}
}

// wakeAll notes that jobs of any queue and kind may be claimable.
func (s *Store) wakeAll() { s.woke = Wake{Any: true, All: true} }

// Woke reports, and forgets, whether writes since the last call may have
// made jobs claimable (an enqueue, a promotion, a freed slot, a child whose
// parents finished), and for which held claims: they should look again.
func (s *Store) Woke() Wake {
	w := s.woke
	s.woke = Wake{}
	return w
}

// FailingChanged reports, and forgets, whether writes since the last
// call may have changed what GET /failing says of jobs.
func (s *Store) FailingChanged() bool {
	f := s.failing
	s.failing = false
	return f
}

// intern returns b as a string, sharing the memory of equal strings seen
// before (kinds, queues, workers repeat; each allocation costs in Wasm).
func (s *Store) intern(b []byte) string {
	if v, ok := s.strings[string(b)]; ok {
		return v
	}
	v := string(b)
	if len(s.strings) < 4096 {
		s.strings[v] = v
	}
	return v
}

func stateOf(b []byte) fence.State {
	for _, st := range fence.States {
		if string(st) == string(b) {
			return st
		}
	}
	return fence.State(b)
}

// notFound refuses a job id the tenant does not have.
func notFound(id int64) *api.Error {
	return api.Refuse(api.CodeNotFound, "job %q does not exist", strconv.FormatInt(id, 10))
}

// isNotFound reports whether err is the refusal of a job id the tenant
// does not have.
func isNotFound(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && e.Code == api.CodeNotFound
}

// The three ranges of ready jobs, each a partial index's condition
// (migration 0018), written into every statement that reads one: SQLite
// uses a partial index only for a statement that states its condition.
// Jobs without a key; under a concurrency key only; under a rate key, with
// or without a concurrency key.
const (
	readyPlain = `state = 'available' AND concurrency_key IS NULL AND rate_key IS NULL`
	readyKeyed = `state = 'available' AND concurrency_key IS NOT NULL AND rate_key IS NULL`
	readyRated = `state = 'available' AND rate_key IS NOT NULL`
)

// readyAll is every ready job, as a table: the three ranges.
const readyAll = `(SELECT * FROM stile_jobs WHERE ` + readyPlain + ` UNION ALL SELECT * FROM stile_jobs WHERE ` + readyKeyed +
	` UNION ALL SELECT * FROM stile_jobs WHERE ` + readyRated + `)`

// Job is a stored job. The fence's view of it is embedded.
type Job struct {
	fence.Job
	Kind           string
	Queue          string
	Priority       int
	Args           []byte
	CreatedAt      int64
	FinishedAt     int64
	Output         []byte
	LastError      string
	BackoffMs      int64
	BackoffMaxMs   int64
	Tags           []byte // JSON array of strings
	UniqueKey      string
	ConcurrencyKey string
	RateKey        string
	// DebounceKey, DebounceKeep, DebounceUntil, Collapsed and AllArgs: a
	// debounced job's key, what it keeps, the latest it may be moved to
	// (0: no bound), how many enqueues it collected, and with keep "all"
	// their args (a JSON array). ThrottleKey: a throttled job's key.
	DebounceKey    string
	DebounceKeep   string
	DebounceUntil  int64
	Collapsed      int64
	AllArgs        []byte
	ThrottleKey    string
	PendingParents int64
	RunRegardless  bool
	CancelAt       int64 // when a cancel was requested, while running
	// Heartbeats the running attempt sent, and the last one's time.
	Heartbeats, LastHeartbeatAt int64
	// Progress is what the handler last published with a heartbeat
	// (JSON; nil: nothing since the attempt was claimed).
	Progress []byte
	// Traceparent is the enqueuing request's traceparent.
	Traceparent string
	// Dependents says jobs may wait for this one: its end settles them.
	Dependents bool
	// KeepsEnded says the row keeps an ended attempt (ended_*), which
	// moves to the history table when the next attempt ends.
	KeepsEnded bool
}

// Backoff is the job's retry schedule.
func (j *Job) Backoff() fence.Backoff {
	return fence.Backoff{BaseMs: j.BackoffMs, MaxMs: j.BackoffMaxMs}
}

// fenceColumns are what the fence and a finished attempt need: no args,
// no output (either may be a megabyte).
const fenceColumns = `id, state, attempt, failures, max_attempts, lease_ms, backoff_ms, backoff_max_ms,
	run_at, worker, lease_token, claimed_at, lease_until, last_error, timeout_ms, cancel_requested,
	concurrency_key, tags, heartbeats, last_heartbeat_at, dependents, ended_attempt IS NOT NULL, kind`

// jobColumns are fenceColumns and the rest of the row.
const jobColumns = fenceColumns + `, queue, priority, args, created_at, output, finished_at,
	unique_key, pending_parents, run_regardless, traceparent, rate_key,
	debounce_key, debounce_keep, debounce_until, collapsed, all_args, throttle_key, progress`

func (s *Store) scanFence(r *do.Rows, j *Job) {
	j.ID = r.Int(0)
	j.State = stateOf(r.TextBytes(1))
	j.Attempt = r.Int(2)
	j.Failures = r.Int(3)
	j.MaxAttempts = r.Int(4)
	j.LeaseMs = r.Int(5)
	j.BackoffMs = r.Int(6)
	j.BackoffMaxMs = r.Int(7)
	j.RunAt = r.Int(8)
	j.Worker = s.intern(r.TextBytes(9))
	j.LeaseToken = r.Text(10)
	j.ClaimedAt = r.Int(11)
	j.LeaseUntil = r.Int(12)
	j.LastError = r.Text(13)
	j.TimeoutMs = r.Int(14)
	j.CancelAt = r.Int(15)
	j.CancelRequested = !r.Null(15)
	j.ConcurrencyKey = s.intern(r.TextBytes(16))
	j.Tags = r.Bytes(17)
	j.Heartbeats = r.Int(18)
	j.LastHeartbeatAt = r.Int(19)
	j.Dependents = r.Int(20) != 0
	j.KeepsEnded = r.Int(21) != 0
	j.Kind = s.intern(r.TextBytes(22)) // a report's answer names it
}

func (s *Store) scanJob(r *do.Rows) Job {
	var j Job
	s.scanFence(r, &j)
	j.Queue = s.intern(r.TextBytes(23))
	j.Priority = int(r.Int(24))
	j.Args = r.Bytes(25)
	j.CreatedAt = r.Int(26)
	j.Output = r.Bytes(27)
	j.FinishedAt = r.Int(28)
	j.UniqueKey = r.Text(29)
	j.PendingParents = r.Int(30)
	j.RunRegardless = r.Int(31) == 1
	j.Traceparent = r.Text(32)
	j.RateKey = s.intern(r.TextBytes(33))
	j.DebounceKey = s.intern(r.TextBytes(34))
	j.DebounceKeep = s.intern(r.TextBytes(35))
	j.DebounceUntil = r.Int(36)
	j.Collapsed = r.Int(37)
	j.AllArgs = r.Bytes(38)
	j.ThrottleKey = s.intern(r.TextBytes(39))
	j.Progress = r.Bytes(40)
	return j
}

// Get reads one job.
func (s *Store) Get(id int64) (Job, error) {
	var j Job
	err := s.readJob(id, jobColumns, func(r *do.Rows) { j = s.scanJob(r) })
	return j, err
}

// getFence reads what a heartbeat, report or cancel needs of a job.
func (s *Store) getFence(id int64) (Job, error) {
	var j Job
	err := s.readJob(id, fenceColumns, func(r *do.Rows) { s.scanFence(r, &j) })
	return j, err
}

func (s *Store) readJob(id int64, columns string, scan func(*do.Rows)) error {
	rows, err := s.db.Query(`SELECT `+columns+` FROM stile_jobs WHERE id = ?`, id)
	if err != nil {
		return printf.Errorf("read job %d: %w", id, err)
	}
	if !rows.Next() {
		if rows.Err() != nil {
			return printf.Errorf("read job %d: %w", id, rows.Err())
		}
		return notFound(id)
	}
	scan(rows)
	return rows.Err()
}
