package fencestore

import (
	"sort"
	"strings"

	"github.com/stile-run/stile/internal/printf"
)

// ClaimRequest selects the jobs a worker may take.
type ClaimRequest struct {
	Worker string
	Queues []string // at least one
	Kinds  []string // empty: any kind
	Limit  int
}

// MaxKeysPerClaim bounds the concurrency keys with free slots one claim
// looks at (least recently used first, so every key gets its turn).
const MaxKeysPerClaim = 64

// Claim takes up to req.Limit available jobs of req.Queues in the order
// priority, run_at, id: each gets the next attempt number, the worker, a
// fresh random lease token (SQLite's randomblob: 128 bits from the host's
// random source) and a lease until now + its lease_ms. A job under a
// concurrency limit is taken only into a free slot.
//
// Jobs are read along index ranges cut at what can be taken: one range per
// queue for jobs without a key, one per queue and key with free slots for
// the others. A key that is full is never read, however many jobs wait on
// it.
func (s *Store) Claim(now int64, req ClaimRequest) ([]Job, error) {
	paused, err := s.PausedQueues()
	if err != nil {
		return nil, err
	}
	if len(paused) > 0 {
		var running []string
		for _, q := range req.Queues {
			if !paused[q] {
				running = append(running, q)
			}
		}
		if len(running) == 0 {
			return nil, nil
		}
		req.Queues = running
	}
	free, err := s.freeSlots()
	if err != nil {
		return nil, err
	}
	kinds, kindArgs := "", []any{}
	if len(req.Kinds) > 0 {
		kinds = " AND kind IN (?" + strings.Repeat(", ?", len(req.Kinds)-1) + ")"
		for _, k := range req.Kinds {
			kindArgs = append(kindArgs, k)
		}
	}
	const unkeyed = `SELECT id, priority, run_at FROM stile_jobs
		WHERE state = 'available' AND concurrency_key IS NULL AND queue = ?`
	const order = ` ORDER BY priority, run_at, id LIMIT ?`
	var ids string
	args := []any{req.Worker, now}
	taken := map[string]int{}
	if len(free) == 0 && len(req.Queues) == 1 {
		// The common case, one statement: one queue, no limit with room.
		ids = `SELECT id FROM (` + unkeyed + kinds + order + `)`
		args = append(append(append(args, req.Queues[0]), kindArgs...), req.Limit)
	} else {
		type cand struct {
			id, priority, runAt int64
			key                 string
		}
		var cands []cand
		read := func(sql string, key string, lead []any, limit int) error {
			rows, err := s.db.Query(sql, append(append(lead, kindArgs...), limit)...)
			if err != nil {
				return printf.Errorf("claim for worker %s: %w", req.Worker, err)
			}
			for rows.Next() {
				cands = append(cands, cand{rows.Int(0), rows.Int(1), rows.Int(2), key})
			}
			return rows.Err()
		}
		for _, q := range req.Queues {
			if err := read(unkeyed+kinds+order, "", []any{q}, req.Limit); err != nil {
				return nil, err
			}
			for _, f := range free {
				if err := read(`SELECT id, priority, run_at FROM stile_jobs WHERE state = 'available'
					AND concurrency_key = ? AND queue = ?`+kinds+order, f.key, []any{f.key, q}, min(req.Limit, f.free)); err != nil {
					return nil, err
				}
			}
		}
		sort.Slice(cands, func(a, b int) bool {
			x, y := cands[a], cands[b]
			return claimsBefore(x.priority, x.runAt, x.id, y.priority, y.runAt, y.id)
		})
		room := map[string]int{}
		for _, f := range free {
			room[f.key] = f.free
		}
		chosen := make([]int64, 0, req.Limit)
		for _, c := range cands {
			if len(chosen) == req.Limit {
				break
			}
			if c.key != "" {
				if taken[c.key] == room[c.key] {
					continue
				}
				taken[c.key]++
			}
			chosen = append(chosen, c.id)
		}
		if len(chosen) == 0 {
			return nil, nil
		}
		s.buf = idList(s.buf, chosen)
		ids = `SELECT value FROM json_each(?)`
		args = append(args, string(s.buf))
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'running', attempt = attempt + 1,
		worker = ?, lease_token = lower(hex(randomblob(16))), claimed_at = ?2,
		lease_until = ?2 + lease_ms, heartbeats = 0, last_heartbeat_at = NULL
		WHERE state = 'available' AND id IN (`+ids+`)
		RETURNING `+jobColumns, args...)
	if err != nil {
		return nil, printf.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	out := make([]Job, 0, rows.Len())
	for rows.Next() {
		j := s.scanJob(rows)
		s.due.Added(j.LeaseUntil)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, printf.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	for key, n := range taken {
		if err := s.takeSlots(now, key, n); err != nil {
			return nil, err
		}
	}
	// RETURNING has no order: restore the claim order.
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		return claimsBefore(int64(x.Priority), x.RunAt, x.ID, int64(y.Priority), y.RunAt, y.ID)
	})
	return out, nil
}

// claimsBefore is the claim order: priority, then run_at, then id (the
// order of the ready indexes).
func claimsBefore(ap, ar, ai, bp, br, bi int64) bool {
	if ap != bp {
		return ap < bp
	}
	if ar != br {
		return ar < br
	}
	return ai < bi
}
