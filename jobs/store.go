package jobs

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
)

// Store reads and writes jobs in a tenant's SQLite database. Its methods
// expect to run inside the request's transaction; they read state, ask
// package fence what to do, and persist that decision with writes guarded
// so that "0 rows" means the state moved underneath them.
type Store struct {
	db      *do.DB
	due     DueTracker
	strings map[string]string
}

// DueTracker learns how the store's writes move due times (run_at of
// waiting jobs, lease deadlines of running ones), so the tenant can keep
// its alarm without re-reading the minimum after every request.
type DueTracker interface {
	// Added: something is now due at at.
	Added(at int64)
	// Removed: something due at at no longer is.
	Removed(at int64)
	// Unknown: many things changed; re-read the minimum.
	Unknown()
}

type noTracker struct{}

func (noTracker) Added(int64)   {}
func (noTracker) Removed(int64) {}
func (noTracker) Unknown()      {}

// New returns a store over db; due may be nil.
func New(db *do.DB, due DueTracker) *Store {
	if due == nil {
		due = noTracker{}
	}
	return &Store{db: db, due: due, strings: map[string]string{}}
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

// ErrNotFound is returned for a job id the tenant does not have.
var ErrNotFound = errors.New("job not found")

// errGuard means a guarded write matched no row although the state read in
// the same transaction said it would: a bug, never a normal outcome.
var errGuard = errors.New("guarded write matched no row")

// NewJob is a validated job to insert.
type NewJob struct {
	Kind         string
	Queue        string
	Priority     int
	Args         []byte // JSON
	RunAt        int64
	MaxAttempts  int64
	LeaseMs      int64
	BackoffMs    int64
	BackoffMaxMs int64
}

// Job is a stored job.
type Job struct {
	fence.Job
	Kind         string
	Queue        string
	Priority     int
	Args         []byte
	RunAt        int64
	CreatedAt    int64
	ClaimedAt    int64
	FinishedAt   int64
	Output       []byte
	LastError    string
	BackoffMs    int64
	BackoffMaxMs int64
}

// Backoff is the job's retry schedule.
func (j *Job) Backoff() fence.Backoff {
	return fence.Backoff{BaseMs: j.BackoffMs, MaxMs: j.BackoffMaxMs}
}

// fenceColumns are what the fence and a finished attempt need: no args,
// no output (either may be a megabyte).
const fenceColumns = `id, state, attempt, failures, max_attempts, lease_ms, backoff_ms, backoff_max_ms,
	run_at, worker, lease_token, claimed_at, lease_until, last_error`

// jobColumns are fenceColumns and the rest of the row.
const jobColumns = fenceColumns + `, kind, queue, priority, args, created_at, output, finished_at`

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
}

func (s *Store) scanJob(r *do.Rows) Job {
	var j Job
	s.scanFence(r, &j)
	j.Kind = s.intern(r.TextBytes(14))
	j.Queue = s.intern(r.TextBytes(15))
	j.Priority = int(r.Int(16))
	j.Args = r.Bytes(17)
	j.CreatedAt = r.Int(18)
	j.Output = r.Bytes(19)
	j.FinishedAt = r.Int(20)
	return j
}

// Enqueue inserts jobs at now: available when RunAt <= now, else scheduled.
func (s *Store) Enqueue(now int64, jobs []NewJob) ([]Job, error) {
	out := make([]Job, 0, len(jobs))
	for i, n := range jobs {
		state := fence.StateAvailable
		if n.RunAt > now {
			state = fence.StateScheduled
		}
		rows, err := s.db.Query(`INSERT INTO stile_jobs (kind, queue, priority, args, state, max_attempts,
			lease_ms, backoff_ms, backoff_max_ms, run_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			n.Kind, n.Queue, n.Priority, string(n.Args), string(state), n.MaxAttempts,
			n.LeaseMs, n.BackoffMs, n.BackoffMaxMs, n.RunAt, now)
		if err != nil {
			return nil, fmt.Errorf("enqueue job %d of %d (kind %s): %w", i+1, len(jobs), n.Kind, err)
		}
		if !rows.Next() {
			return nil, fmt.Errorf("enqueue job %d of %d: %w", i+1, len(jobs), errGuard)
		}
		j := Job{Kind: n.Kind, Queue: n.Queue, Priority: n.Priority, Args: n.Args, RunAt: n.RunAt,
			CreatedAt: now, BackoffMs: n.BackoffMs, BackoffMaxMs: n.BackoffMaxMs}
		j.ID, j.State, j.MaxAttempts, j.LeaseMs = rows.Int(0), state, n.MaxAttempts, n.LeaseMs
		if state == fence.StateScheduled {
			s.due.Added(n.RunAt)
		}
		out = append(out, j)
	}
	return out, nil
}

// Get reads one job.
func (s *Store) Get(id int64) (Job, error) {
	var j Job
	err := s.readJob(id, jobColumns, func(r *do.Rows) { j = s.scanJob(r) })
	return j, err
}

// getFence reads what a heartbeat or report needs of a job.
func (s *Store) getFence(id int64) (Job, error) {
	var j Job
	err := s.readJob(id, fenceColumns, func(r *do.Rows) { s.scanFence(r, &j) })
	return j, err
}

func (s *Store) readJob(id int64, columns string, scan func(*do.Rows)) error {
	rows, err := s.db.Query(`SELECT `+columns+` FROM stile_jobs WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("read job %d: %w", id, err)
	}
	if !rows.Next() {
		if rows.Err() != nil {
			return fmt.Errorf("read job %d: %w", id, rows.Err())
		}
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	scan(rows)
	return rows.Err()
}

// ClaimRequest selects the jobs a worker may take.
type ClaimRequest struct {
	Worker string
	Queues []string // at least one
	Kinds  []string // empty: any kind
	Limit  int
}

// Claim takes up to req.Limit available jobs of req.Queues in the order
// priority, run_at, id: each gets the next attempt number, the worker, a
// fresh random lease token (SQLite's randomblob: 128 bits from the host's
// random source) and a lease until now + its lease_ms.
//
// Each queue is read along its own range of the stile_jobs_ready index, cut
// at the limit, so a claim never walks jobs it will not take. One queue is
// one statement; several are read one by one and merged here (Durable
// Object SQLite allows only five terms in a compound SELECT).
func (s *Store) Claim(now int64, req ClaimRequest) ([]Job, error) {
	kinds, kindArgs := "", []any{}
	if len(req.Kinds) > 0 {
		kinds = " AND kind IN (?" + strings.Repeat(", ?", len(req.Kinds)-1) + ")"
		for _, k := range req.Kinds {
			kindArgs = append(kindArgs, k)
		}
	}
	const pick = `SELECT id, priority, run_at FROM stile_jobs WHERE state = 'available' AND queue = ?`
	const order = ` ORDER BY priority, run_at, id LIMIT ?`
	var ids string
	args := []any{req.Worker, now}
	if len(req.Queues) == 1 {
		ids = `SELECT id FROM (` + pick + kinds + order + `)`
		args = append(append(append(args, req.Queues[0]), kindArgs...), req.Limit)
	} else {
		type cand struct{ id, priority, runAt int64 }
		var cands []cand
		for _, q := range req.Queues {
			rows, err := s.db.Query(pick+kinds+order, append(append([]any{q}, kindArgs...), req.Limit)...)
			if err != nil {
				return nil, fmt.Errorf("claim for worker %s: read queue %s: %w", req.Worker, q, err)
			}
			for rows.Next() {
				cands = append(cands, cand{rows.Int(0), rows.Int(1), rows.Int(2)})
			}
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("claim for worker %s: read queue %s: %w", req.Worker, q, err)
			}
		}
		sort.Slice(cands, func(a, b int) bool {
			x, y := cands[a], cands[b]
			return claimsBefore(x.priority, x.runAt, x.id, y.priority, y.runAt, y.id)
		})
		if len(cands) > req.Limit {
			cands = cands[:req.Limit]
		}
		if len(cands) == 0 {
			return nil, nil
		}
		list := make([]string, len(cands))
		for i, c := range cands {
			list[i] = strconv.FormatInt(c.id, 10)
		}
		ids = `SELECT value FROM json_each(?)`
		args = append(args, "["+strings.Join(list, ",")+"]")
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'running', attempt = attempt + 1,
		worker = ?, lease_token = lower(hex(randomblob(16))), claimed_at = ?2, lease_until = ?2 + lease_ms
		WHERE state = 'available' AND id IN (`+ids+`)
		RETURNING `+jobColumns, args...)
	if err != nil {
		return nil, fmt.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	out := make([]Job, 0, rows.Len())
	for rows.Next() {
		j := s.scanJob(rows)
		s.due.Added(j.LeaseUntil)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	// RETURNING has no order: restore the claim order.
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		return claimsBefore(int64(x.Priority), x.RunAt, x.ID, int64(y.Priority), y.RunAt, y.ID)
	})
	return out, nil
}

// claimsBefore is the claim order: priority, then run_at, then id (the
// order of the stile_jobs_ready index).
func claimsBefore(ap, ar, ai, bp, br, bi int64) bool {
	if ap != bp {
		return ap < bp
	}
	if ar != br {
		return ar < br
	}
	return ai < bi
}

// Heartbeat extends the lease of a live claim. A refused heartbeat is
// audited and returned as a *fence.Rejection.
func (s *Store) Heartbeat(now, id int64, c fence.Claim) (leaseUntil int64, err error) {
	j, err := s.getFence(id)
	if err != nil {
		return 0, err
	}
	if rej := fence.CheckHeartbeat(j.Job, c, now); rej != nil {
		if err := s.audit(now, id, "heartbeat", c, "", rej); err != nil {
			return 0, err
		}
		return 0, rej
	}
	until := fence.ExtendLease(j.Job, now)
	rows, err := s.db.Query(`UPDATE stile_jobs SET lease_until = ?
		WHERE id = ? AND state = 'running' AND attempt = ? AND worker = ? AND lease_token = ? AND lease_until > ?
		RETURNING id`, until, id, j.Attempt, j.Worker, j.LeaseToken, now)
	if err != nil {
		return 0, fmt.Errorf("extend lease of job %d: %w", id, err)
	}
	if !rows.Next() {
		return 0, fmt.Errorf("extend lease of job %d: %w", id, errGuard)
	}
	s.due.Removed(j.LeaseUntil)
	s.due.Added(until)
	return until, nil
}

// Report is an outcome a worker reports for its claim.
type Report struct {
	Claim   fence.Claim
	Outcome fence.Outcome // completed or failed
	Output  []byte        // JSON, completed only
	Error   string        // failed only
}

// ReportResult says what a report did.
type ReportResult struct {
	Job       Job
	Duplicate bool // the same outcome was already recorded by this claim
}

// Report records the outcome of a claim if the fence lets it. A refused
// report writes an audit row and nothing else, and returns a
// *fence.Rejection. jitter in [0, 1) spreads the retry of a failure.
func (s *Store) Report(now, id int64, r Report, jitter float64) (ReportResult, error) {
	j, err := s.getFence(id)
	if err != nil {
		return ReportResult{}, err
	}
	var last *fence.Ended
	if j.State != fence.StateRunning && r.Claim.Attempt == j.Attempt && j.Attempt > 0 {
		if last, err = s.ended(id, j.Attempt); err != nil {
			return ReportResult{}, err
		}
	}
	v := fence.CheckReport(j.Job, last, r.Claim, r.Outcome, now)
	if v.Rejected != nil {
		if err := s.audit(now, id, "report", r.Claim, r.Outcome, v.Rejected); err != nil {
			return ReportResult{}, err
		}
		return ReportResult{}, v.Rejected
	}
	if v.Duplicate {
		return ReportResult{Job: j, Duplicate: true}, nil
	}
	var next fence.Next
	switch r.Outcome {
	case fence.OutcomeCompleted:
		next = fence.Next{State: fence.StateCompleted, Failures: j.Failures, RunAt: j.RunAt}
	case fence.OutcomeFailed:
		next = fence.AfterFailure(j.Job, j.Backoff(), now, jitter)
	default:
		return ReportResult{}, fmt.Errorf("report job %d: unknown outcome %q", id, r.Outcome)
	}
	j, err = s.finish(now, j, next, ending{outcome: r.Outcome, output: r.Output, err: r.Error, noticedBy: "report"})
	return ReportResult{Job: j}, err
}

// ending describes how an attempt ended.
type ending struct {
	outcome   fence.Outcome
	output    []byte // completed only
	err       string // failed and lease_expired
	noticedBy string // report, alarm or request
}

// finish ends the running attempt of j as next says: the guarded job update
// first (it is the fence's write), then the attempt's history row. A report
// is guarded by a live lease, an expiry by a lapsed one. It returns the job
// as now stored.
func (s *Store) finish(now int64, j Job, next fence.Next, e ending) (Job, error) {
	var finished, out, lastErr any
	if next.State.Terminal() {
		finished = now
	}
	if e.output != nil {
		out = string(e.output)
	}
	if e.err != "" {
		lastErr = e.err
	} else if j.LastError != "" {
		lastErr = j.LastError
	}
	lease := "lease_until > ?"
	if e.outcome == fence.OutcomeLeaseExpired {
		lease = "lease_until <= ?"
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = ?, failures = ?, run_at = ?, output = ?,
		last_error = ?, finished_at = ?, worker = NULL, lease_token = NULL, claimed_at = NULL, lease_until = NULL
		WHERE id = ? AND state = 'running' AND attempt = ? AND worker = ? AND lease_token = ? AND `+lease+`
		RETURNING id`,
		string(next.State), next.Failures, next.RunAt, out, lastErr, finished,
		j.ID, j.Attempt, j.Worker, j.LeaseToken, now)
	if err != nil {
		return j, fmt.Errorf("record %s of job %d attempt %d: %w", e.outcome, j.ID, j.Attempt, err)
	}
	if !rows.Next() {
		return j, fmt.Errorf("record %s of job %d attempt %d: %w", e.outcome, j.ID, j.Attempt, errGuard)
	}
	var attemptErr any
	if e.err != "" {
		attemptErr = e.err
	}
	if err := s.db.Exec(`INSERT INTO stile_job_attempts (job_id, attempt, worker, lease_token, claimed_at,
		lease_until, ended_at, outcome, error, noticed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		j.ID, j.Attempt, j.Worker, j.LeaseToken, j.ClaimedAt, j.LeaseUntil, now, string(e.outcome), attemptErr, e.noticedBy); err != nil {
		return j, fmt.Errorf("record attempt %d of job %d: %w", j.Attempt, j.ID, err)
	}
	s.due.Removed(j.LeaseUntil)
	if next.State == fence.StateRetryable {
		s.due.Added(next.RunAt)
	}
	j.State, j.Failures, j.RunAt = next.State, next.Failures, next.RunAt
	j.Output, j.FinishedAt = e.output, 0
	if next.State.Terminal() {
		j.FinishedAt = now
	}
	if e.err != "" {
		j.LastError = e.err
	}
	j.Worker, j.LeaseToken, j.ClaimedAt, j.LeaseUntil = "", "", 0, 0
	return j, nil
}

func (s *Store) ended(id, attempt int64) (*fence.Ended, error) {
	rows, err := s.db.Query(`SELECT worker, lease_token, outcome FROM stile_job_attempts
		WHERE job_id = ? AND attempt = ?`, id, attempt)
	if err != nil {
		return nil, fmt.Errorf("read attempt %d of job %d: %w", attempt, id, err)
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	return &fence.Ended{Attempt: attempt, Worker: rows.Text(0), LeaseToken: rows.Text(1),
		Outcome: fence.Outcome(rows.Text(2))}, rows.Err()
}

// maxAuditMessage bounds the stored text of a rejection.
const maxAuditMessage = 512

// audit keeps a refused heartbeat or report, newest RejectionsPerJob per job.
func (s *Store) audit(now, id int64, request string, c fence.Claim, outcome fence.Outcome, rej *fence.Rejection) error {
	worker := c.Worker
	if len(worker) > maxAuditMessage {
		worker = worker[:maxAuditMessage]
	}
	msg := rej.Message
	if len(msg) > maxAuditMessage {
		msg = msg[:maxAuditMessage]
	}
	var out any
	if outcome != "" {
		out = string(outcome)
	}
	if err := s.db.Exec(`INSERT INTO stile_job_rejections (job_id, at, request, worker, attempt, outcome, code, message)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, now, request, worker, c.Attempt, out, string(rej.Code), msg); err != nil {
		return fmt.Errorf("audit refused %s of job %d: %w", request, id, err)
	}
	if err := s.db.Exec(`DELETE FROM stile_job_rejections WHERE job_id = ?1 AND id <
		(SELECT id FROM stile_job_rejections WHERE job_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`,
		id, RejectionsKept-1); err != nil {
		return fmt.Errorf("trim rejections of job %d: %w", id, err)
	}
	return nil
}

// RejectionsKept is how many refused requests are kept per job.
const RejectionsKept = 20

// Attempt is one ended attempt from the history.
type Attempt struct {
	Attempt    int64
	Worker     string
	ClaimedAt  int64
	LeaseUntil int64
	EndedAt    int64
	Outcome    string
	Error      string
	NoticedBy  string
}

// Attempts reads a job's ended attempts, oldest first.
func (s *Store) Attempts(id int64) ([]Attempt, error) {
	rows, err := s.db.Query(`SELECT attempt, worker, claimed_at, lease_until, ended_at, outcome, error, noticed_by
		FROM stile_job_attempts WHERE job_id = ? ORDER BY attempt`, id)
	if err != nil {
		return nil, fmt.Errorf("read attempts of job %d: %w", id, err)
	}
	var out []Attempt
	for rows.Next() {
		out = append(out, Attempt{Attempt: rows.Int(0), Worker: rows.Text(1), ClaimedAt: rows.Int(2),
			LeaseUntil: rows.Int(3), EndedAt: rows.Int(4), Outcome: rows.Text(5), Error: rows.Text(6),
			NoticedBy: rows.Text(7)})
	}
	return out, rows.Err()
}

// Rejection is one audited refusal.
type Rejection struct {
	At      int64
	Request string
	Worker  string
	Attempt int64
	Outcome string
	Code    string
	Message string
}

// Rejections reads a job's audited refusals, oldest first.
func (s *Store) Rejections(id int64) ([]Rejection, error) {
	rows, err := s.db.Query(`SELECT at, request, worker, attempt, outcome, code, message
		FROM stile_job_rejections WHERE job_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("read rejections of job %d: %w", id, err)
	}
	var out []Rejection
	for rows.Next() {
		out = append(out, Rejection{At: rows.Int(0), Request: rows.Text(1), Worker: rows.Text(2),
			Attempt: rows.Int(3), Outcome: rows.Text(4), Code: rows.Text(5), Message: rows.Text(6)})
	}
	return out, rows.Err()
}
