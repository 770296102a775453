package fencestore

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
)

func (s *Store) ended(id, attempt int64) (*fence.Ended, error) {
	rows, err := s.db.Query(`SELECT worker, lease_token, outcome FROM stile_job_attempts WHERE job_id = ?1 AND attempt = ?2
		UNION ALL SELECT ended_worker, ended_token, ended_outcome FROM stile_jobs WHERE id = ?1 AND ended_attempt = ?2`, id, attempt)
	if err != nil {
		return nil, printf.Errorf("read attempt %d of job %d: %w", attempt, id, err)
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
func (s *Store) audit(now, id int64, request string, c fence.Claim, outcome fence.Outcome, rej *api.Error) error {
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
		return printf.Errorf("audit refused %s of job %d: %w", request, id, err)
	}
	if err := s.db.Exec(`DELETE FROM stile_job_rejections WHERE job_id = ?1 AND id <
		(SELECT id FROM stile_job_rejections WHERE job_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2)`,
		id, RejectionsKept-1); err != nil {
		return printf.Errorf("trim rejections of job %d: %w", id, err)
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
	// Heartbeats and the last one's time (0: none).
	Heartbeats, LastHeartbeatAt int64
}

// Attempts reads a job's ended attempts, oldest first: the history
// table's, and the last to end, which its job's row keeps.
func (s *Store) Attempts(id int64) ([]Attempt, error) {
	rows, err := s.db.Query(`SELECT attempt, worker, claimed_at, lease_until, ended_at, outcome, error, noticed_by,
		heartbeats, last_heartbeat_at FROM stile_job_attempts WHERE job_id = ?1
		UNION SELECT ended_attempt, ended_worker, ended_claimed_at, ended_lease_until, ended_at, ended_outcome,
		ended_error, ended_noticed_by, ended_heartbeats, ended_last_heartbeat_at FROM stile_jobs
		WHERE id = ?1 AND ended_attempt IS NOT NULL ORDER BY 1`, id)
	if err != nil {
		return nil, printf.Errorf("read attempts of job %d: %w", id, err)
	}
	var out []Attempt
	for rows.Next() {
		out = append(out, Attempt{Attempt: rows.Int(0), Worker: rows.Text(1), ClaimedAt: rows.Int(2),
			LeaseUntil: rows.Int(3), EndedAt: rows.Int(4), Outcome: rows.Text(5), Error: rows.Text(6),
			NoticedBy: rows.Text(7), Heartbeats: rows.Int(8), LastHeartbeatAt: rows.Int(9)})
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
		return nil, printf.Errorf("read rejections of job %d: %w", id, err)
	}
	var out []Rejection
	for rows.Next() {
		out = append(out, Rejection{At: rows.Int(0), Request: rows.Text(1), Worker: rows.Text(2),
			Attempt: rows.Int(3), Outcome: rows.Text(4), Code: rows.Text(5), Message: rows.Text(6)})
	}
	return out, rows.Err()
}

// Dep is one parent a job waits for, or waited for.
type Dep struct {
	ParentID   int64
	Resolved   string // "", completed or failed
	ResolvedAt int64
}

// Deps reads the parents of a job.
func (s *Store) Deps(id int64) ([]Dep, error) {
	rows, err := s.db.Query(`SELECT parent_id, resolved, resolved_at FROM stile_job_deps
		WHERE child_id = ? ORDER BY parent_id`, id)
	if err != nil {
		return nil, printf.Errorf("read the parents of job %d: %w", id, err)
	}
	var out []Dep
	for rows.Next() {
		out = append(out, Dep{ParentID: rows.Int(0), Resolved: rows.Text(1), ResolvedAt: rows.Int(2)})
	}
	return out, rows.Err()
}
