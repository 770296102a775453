package inboxstore

import (
	"strings"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// A replay hands a reaction the events it already handled again: a bulk
// operation opens its settled deliveries again, slice by slice in event
// order, each with a new claim id (so a settlement of the claim that
// settled it before is refused), while claims hand out none of its
// deliveries past the replay's position and no new event.

// HoldForReplay marks handler replayed from position at (the seq before
// the first delivery to open again). It fails with do.ErrGuard if a replay
// holds it already.
func (s *Store) HoldForReplay(now int64, handler string, at int64) error {
	s.Forget()
	rows, err := s.db.Query(`UPDATE stile_reactions SET replay_to = ?, updated_at = ? WHERE name = ? AND replay_to IS NULL
		RETURNING 1`, at, now, handler)
	if err != nil {
		return printf.Errorf("hold reaction %s for a replay: %w", handler, err)
	}
	if rows.Len() != 1 {
		return printf.Errorf("hold reaction %s for a replay: %w", handler, do.ErrGuard)
	}
	return nil
}

// MoveReplay moves handler's replay position from at to next, or ends the
// replay (end): its claims go on as before. Guarded by at: 0 rows is a
// stale slice.
func (s *Store) MoveReplay(now int64, handler string, at, next int64, end bool) error {
	s.Forget()
	to := any(next)
	if end {
		to = nil
	}
	rows, err := s.db.Query(`UPDATE stile_reactions SET replay_to = ?, updated_at = ? WHERE name = ? AND replay_to = ?
		RETURNING 1`, to, now, handler, at)
	if err != nil {
		return printf.Errorf("move the replay of %s past %d: %w", handler, at, err)
	}
	if rows.Len() != 1 {
		return printf.Errorf("move the replay of %s past %d: %w", handler, at, do.ErrGuard)
	}
	s.woke = true // what it opened, or its new events, may be claimed
	return nil
}

// InFlightAfter reports the earliest lease end of handler's deliveries
// after seq that a worker holds at now (0: none). A replay opens nothing
// before them until they settle or their leases run out, so the reaction
// never runs two claims at once.
func (s *Store) InFlightAfter(now int64, handler string, seq int64) (int64, error) {
	rows, err := s.db.Query(`SELECT coalesce(min(lease_until), 0) FROM stile_inbox INDEXED BY stile_inbox_open
		WHERE handler = ? AND seq > ? AND state IN ('pending', 'retry', 'ready') AND state = 'pending' AND lease_until > ?`, handler, seq, now)
	if err != nil {
		return 0, printf.Errorf("read the deliveries of %s in flight: %w", handler, err)
	}
	rows.Next()
	return rows.Int(0), rows.Err()
}

// Reopened is what a slice of a replay found.
type Reopened struct {
	Found, Reopened int64
	Last            int64 // the seq of the last event found (0: none)
	FirstOpen       int64 // the first found whose delivery is still open, left as it is (0: none)
	More            bool  // events of the handler may follow Last up to until
}

// Reopen delivers again h's events after seq up to until, at most limit
// of them found in the log: each delivery is ready to be claimed again,
// with a new claim id and no failures (one retention removed is made
// anew); one still open is left as it is (it is delivered once, not
// twice).
func (s *Store) Reopen(now int64, h Handler, after, until int64, limit int) (Reopened, error) {
	var r Reopened
	if after >= until {
		return r, nil
	}
	evs, _, err := s.ev.Read(after, h.Types, limit, 0)
	if err != nil {
		return r, err
	}
	r.More = len(evs) == limit
	for len(evs) > 0 && evs[len(evs)-1].Seq > until {
		evs, r.More = evs[:len(evs)-1], false
	}
	if len(evs) == 0 {
		return r, nil
	}
	r.Found, r.Last = int64(len(evs)), evs[len(evs)-1].Seq
	opened := make(map[int64]bool, len(evs))
	for start := 0; start < len(evs); start += claimRows {
		chunk := evs[start:min(start+claimRows, len(evs))]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO stile_inbox (handler, seq, state, claim_id, worker, attempt, claimed_at, lease_until, replays) VALUES `)
		args := make([]any, 0, 4*len(chunk))
		for i, ev := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString(`(?, ?, 'ready', lower(hex(randomblob(16))), '', 1, ?, ?, 1)`)
			args = append(args, h.Name, ev.Seq, now, now)
		}
		sql.WriteString(` ON CONFLICT (handler, seq) DO UPDATE SET state = 'ready', claim_id = excluded.claim_id, failures = 0, replays = replays + 1,
			run_at = NULL, error = NULL, outcome = NULL, settled_at = NULL WHERE state IN ('succeeded', 'skipped') RETURNING seq`)
		rows, err := s.db.Query(sql.String(), args...)
		if err != nil {
			return r, printf.Errorf("open the deliveries of %s after %d again: %w", h.Name, after, err)
		}
		for rows.Next() {
			opened[rows.Int(0)] = true
		}
		if err := rows.Err(); err != nil {
			return r, printf.Errorf("open the deliveries of %s after %d again: %w", h.Name, after, err)
		}
	}
	r.Reopened = int64(len(opened))
	for _, ev := range evs {
		if !opened[ev.Seq] {
			r.FirstOpen = ev.Seq
			break
		}
	}
	return r, nil
}
