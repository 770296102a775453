package fencestore

import (
	"slices"
	"sort"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/budget"
)

// ClaimRequest selects the jobs a worker may take.
type ClaimRequest struct {
	Worker string
	Queues []string // at least one; [api.AnyQueue] for every queue with ready jobs
	Kinds  []string // empty: any kind
	Limit  int
	// MaxBytes, if not 0, stops the claim at that many bytes of the
	// jobs' args, output, tags and last errors (jobBytes): at least one job
	// goes.
	MaxBytes int64
}

// MaxKeysPerClaim bounds the concurrency keys with free slots one claim
// looks at (least recently used first, so every key gets its turn).
const MaxKeysPerClaim = 64

// Claim takes up to req.Limit available jobs of req.Queues in the order
// priority, run_at, id: each gets the next attempt number, the worker, a
// fresh random lease token (SQLite's randomblob: 128 bits from the host's
// random source) and a lease until now + its lease_ms. A job under a
// concurrency limit is taken only into a free slot, and one under a rate
// limit only while its key has room (its start is counted in the same
// transaction). Queues
// [api.AnyQueue] claims from every queue with ready jobs.
//
// Jobs are read along index ranges cut at what can be taken: one range per
// queue for jobs without a key, one per queue and key with free slots for
// the others. A key that is full is never read, however many jobs wait on
// it, and a key's range no further than the claim's last job without a key
// when there are enough of those to fill it.
//
// cut says req.MaxBytes stopped the claim short of req.Limit with more
// jobs ready: the claimer should claim again at once.
func (s *Store) Claim(now int64, req ClaimRequest) (jobs []Job, cut bool, err error) {
	free, err := s.freeSlots()
	if err != nil {
		return nil, false, err
	}
	rates, err := s.openRates(now)
	if err != nil {
		return nil, false, err
	}
	queues := req.Queues
	if queues, err = s.claimQueues(queues, free, rates); err != nil || len(queues) == 0 {
		return nil, false, err
	}
	kinds, kindArgs := kindFilter(req.Kinds)
	var ids string
	args := []any{req.Worker, now}
	taken := map[string]int{}
	started := map[string]int64{}
	budgeted := req.MaxBytes > 0 && req.Limit > 1
	if len(free) == 0 && len(rates) == 0 && len(queues) == 1 {
		// The common case, one statement: one queue, no limit with room.
		ids = `SELECT id FROM (` + plainReady + kinds + claimOrder + do.Limit(req.Limit) + `)`
		args = append(append(args, queues[0]), kindArgs...)
		if budgeted {
			// The jobs in claim order as far as their running total of
			// bytes fits, and the first whatever its size.
			ids = `SELECT id FROM (SELECT id, sum(size) OVER w AS total, row_number() OVER w AS n FROM (` +
				plainReady + kinds + claimOrder + do.Limit(req.Limit) + `) WINDOW w AS (ORDER BY priority, run_at, id)) WHERE total <= ? OR n = 1`
			args = append(args, req.MaxBytes)
		}
	} else {
		type cand struct {
			id, priority, runAt, size int64
			key, rate                 string // concurrency key, rate key
		}
		var cands []cand
		read := func(sql string, rate string, lead []any, limit int) error {
			rows, err := s.db.Query(sql+do.Limit(limit), append(lead, kindArgs...)...)
			if err != nil {
				return printf.Errorf("claim for worker %s: %w", req.Worker, err)
			}
			for rows.Next() {
				cands = append(cands, cand{rows.Int(0), rows.Int(1), rows.Int(2), rows.Int(3), s.intern(rows.TextBytes(4)), rate})
			}
			return rows.Err()
		}
		for _, q := range queues {
			plain := len(cands)
			if err := read(plainReady+kinds+claimOrder, "", []any{q}, req.Limit); err != nil {
				return nil, false, err
			}
			// A queue with req.Limit jobs without a key ready has the
			// claim's jobs at or before the last of them: a key's jobs after
			// it are never taken (jobs without a key are never passed
			// over), so its ranges are read only up to it, a few jobs each
			// instead of up to req.Limit.
			keyed, rated := keyedReady, ratedReady
			var before []any
			if len(cands)-plain == req.Limit {
				last := cands[len(cands)-1]
				keyed, rated = keyedBefore, ratedBefore
				before = []any{last.priority, last.runAt}
			}
			for _, f := range free {
				if err := read(keyed+kinds+claimOrder, "", append([]any{f.key, q}, before...), min(req.Limit, f.free)); err != nil {
					return nil, false, err
				}
			}
			for _, r := range rates {
				if err := read(rated+kinds+claimOrder, r.Key, append([]any{r.Key, q}, before...), int(min(int64(req.Limit), r.room))); err != nil {
					return nil, false, err
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
		rateRoom := map[string]int64{}
		for _, r := range rates {
			rateRoom[r.Key] = r.room
		}
		chosen := make([]int64, 0, req.Limit)
		sizes := make([]int64, 0, req.Limit)
		for _, c := range cands {
			if len(chosen) == req.Limit {
				break
			}
			if c.key != "" && taken[c.key] == room[c.key] || c.rate != "" && started[c.rate] == rateRoom[c.rate] {
				continue
			}
			if sizes = append(sizes, c.size); budget.Fit(sizes, req.MaxBytes) < len(sizes) {
				cut = true // a job this claim could take does not fit
				break
			}
			if c.key != "" {
				taken[c.key]++
			}
			if c.rate != "" {
				started[c.rate]++
			}
			chosen = append(chosen, c.id)
		}
		if len(chosen) == 0 {
			return nil, false, nil
		}
		s.buf = idList(s.buf, chosen)
		ids = `SELECT value FROM json_each(?)`
		args = append(args, string(s.buf))
	}
	rows, err := s.db.Query(`UPDATE stile_jobs SET state = 'running', attempt = attempt + 1,
		worker = ?, lease_token = lower(hex(randomblob(16))), claimed_at = ?2,
		lease_until = ?2 + lease_ms, heartbeats = 0, last_heartbeat_at = NULL, progress = NULL
		WHERE state = 'available' AND id IN (`+ids+`)
		RETURNING `+jobColumns, args...)
	if err != nil {
		return nil, false, printf.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	out := make([]Job, 0, rows.Len())
	claimed := int64(0)
	for rows.Next() {
		j := s.scanJob(rows)
		s.due.Added(j.LeaseUntil)
		s.changed(j.ID, j.Kind, j.State, j.Attempt, nil)
		out = append(out, j)
		claimed += j.bytes()
	}
	if err := rows.Err(); err != nil {
		return nil, false, printf.Errorf("claim for worker %s: %w", req.Worker, err)
	}
	for key, n := range taken {
		if err := s.takeSlots(now, key, n); err != nil {
			return nil, false, err
		}
	}
	for _, r := range rates {
		if n := started[r.Key]; n > 0 {
			if err := s.takeStarts(now, r.Rate, n); err != nil {
				return nil, false, err
			}
		}
	}
	if budgeted && !cut && len(out) < req.Limit && claimed > req.MaxBytes-maxClaimBytes {
		// One statement claimed: whether the budget stopped it, rather
		// than a lack of ready jobs, is whether a job is left.
		if cut, err = s.MoreReady(now, req); err != nil {
			return nil, false, err
		}
	}
	// RETURNING has no order: restore the claim order.
	sort.Slice(out, func(a, b int) bool {
		x, y := out[a], out[b]
		return claimsBefore(int64(x.Priority), x.RunAt, x.ID, int64(y.Priority), y.RunAt, y.ID)
	})
	return out, cut, nil
}

// jobBytes is what a job weighs in a claim or a page: its args, output,
// tags and last error (read into the module, and most of the answer) and
// a fixed cost for the rest; Job.bytes is the same of a job read.
const jobBytes = `length(args) + coalesce(length(output), 0) + coalesce(length(tags), 0) +
	coalesce(length(last_error), 0) + coalesce(length(all_args), 0) + coalesce(length(progress), 0) + 256`

func (j *Job) bytes() int64 {
	return int64(len(j.Args)+len(j.Output)+len(j.Tags)+len(j.LastError)+len(j.AllArgs)+len(j.Progress)) + 256
}

// maxClaimBytes bounds a ready job's jobBytes: the largest args, args
// collected by a debounce, tags and error the API admits (it has no output
// yet).
const maxClaimBytes = api.MaxArgsBytes + MaxAllArgsBytes + api.MaxTags*(api.MaxTagBytes+3) + api.MaxErrorBytes + 256

// The ranges a claim reads, in the claim order, with their jobBytes and
// concurrency key: ready jobs of one queue without a key; of one
// concurrency key and queue; of one rate key and queue whose concurrency
// key, if any, has room (a job under both keys is read by its rate key).
const (
	plainReady = `SELECT id, priority, run_at, ` + jobBytes + ` AS size, concurrency_key FROM stile_jobs
		WHERE ` + readyPlain + ` AND queue = ?`
	keyedReady = `SELECT id, priority, run_at, ` + jobBytes + ` AS size, concurrency_key FROM stile_jobs WHERE ` + readyKeyed + `
		AND concurrency_key = ? AND queue = ?`
	ratedReady = `SELECT id, priority, run_at, ` + jobBytes + ` AS size, concurrency_key FROM stile_jobs WHERE ` + readyRated + `
		AND rate_key = ? AND queue = ?
		AND (concurrency_key IS NULL OR concurrency_key IN (SELECT key FROM stile_concurrency WHERE in_use < slots))`
	claimOrder = ` ORDER BY priority, run_at, id`
	// keyedBefore and ratedBefore are the keyed and rated ranges up to a
	// priority and run_at (the last two parameters) in the claim order: a
	// range of the index, which they read no further. Not up to an id as
	// well: a row value with it leaves SQLite a range of the first two
	// columns only, and every job of the last run_at to step over; the id
	// after an equal priority and run_at makes SQLite plan the statement
	// again at every claim.
	keyedBefore = keyedReady + ` AND (priority, run_at) <= (?, ?)`
	ratedBefore = ratedReady + ` AND (priority, run_at) <= (?, ?)`
)

// kindFilter is the SQL and arguments that restrict a read to kinds (none:
// every kind).
func kindFilter(kinds []string) (string, []any) {
	if len(kinds) == 0 {
		return "", nil
	}
	args := make([]any, len(kinds))
	for i, k := range kinds {
		args[i] = k
	}
	return " AND kind IN (?" + strings.Repeat(", ?", len(kinds)-1) + ")", args
}

// MaxAnyQueues bounds the queues a claim of api.AnyQueue reads: the first
// queues with ready jobs in name order, paused ones passed over.
const MaxAnyQueues = 64

// claimQueues is the queues a claim reads: those it names, or with
// api.AnyQueue every queue with ready jobs (of the free concurrency keys
// and the rate keys with room, for keyed ones), up to MaxAnyQueues; paused
// queues left out.
func (s *Store) claimQueues(queues []string, free []freeSlot, rates []openRate) ([]string, error) {
	paused, err := s.PausedQueues()
	if err != nil {
		return nil, err
	}
	if len(queues) == 1 && queues[0] == api.AnyQueue {
		found, err := s.readyQueues(paused, readyPlain)
		if err != nil {
			return nil, err
		}
		add := func(where, key string) error {
			more, err := s.readyQueues(paused, where, key)
			for _, q := range more {
				if !slices.Contains(found, q) {
					found = append(found, q)
				}
			}
			return err
		}
		for _, f := range free {
			if err := add(readyKeyed+` AND concurrency_key = ?2`, f.key); err != nil {
				return nil, err
			}
		}
		for _, r := range rates {
			if err := add(readyRated+` AND rate_key = ?2`, r.Key); err != nil {
				return nil, err
			}
		}
		return found, nil
	}
	if len(paused) == 0 {
		return queues, nil
	}
	running := make([]string, 0, len(queues))
	for _, q := range queues {
		if !paused[q] {
			running = append(running, q)
		}
	}
	return running, nil
}

// readyQueues lists the queues with ready jobs that match where (one of
// the ready ranges, and a term on its key, whose ?2 is key, if given), up to MaxAnyQueues of them that are
// not paused. Each step is one seek into the ready index, from one queue to
// the next: the cost is the number of queues, not of jobs. A page of
// queues that paused ones thinned out is followed by the next.
func (s *Store) readyQueues(paused map[string]bool, where string, key ...any) ([]string, error) {
	next := `SELECT queue FROM stile_jobs WHERE ` + where
	var out []string
	for after := ""; ; {
		rows, err := s.db.Query(`WITH RECURSIVE q(name) AS (
			SELECT (`+next+` AND queue > ?1 ORDER BY queue LIMIT 1)
			UNION ALL SELECT (`+next+` AND queue > q.name ORDER BY queue LIMIT 1) FROM q WHERE q.name IS NOT NULL
			`+do.Limit(MaxAnyQueues)+`)
			SELECT name FROM q WHERE name IS NOT NULL`, append([]any{after}, key...)...)
		if err != nil {
			return nil, printf.Errorf("find the queues with ready jobs: %w", err)
		}
		n := 0
		for rows.Next() {
			n++
			q := s.intern(rows.TextBytes(0))
			after = q
			if !paused[q] && len(out) < MaxAnyQueues {
				out = append(out, q)
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < MaxAnyQueues || len(out) == MaxAnyQueues {
			return out, nil
		}
	}
}

// MoreReady reports whether a claim like req would find another job now:
// after a claim that took all it asked for, whether it left work.
func (s *Store) MoreReady(now int64, req ClaimRequest) (bool, error) {
	free, err := s.freeSlots()
	if err != nil {
		return false, err
	}
	rates, err := s.openRates(now)
	if err != nil {
		return false, err
	}
	queues, err := s.claimQueues(req.Queues, free, rates)
	if err != nil {
		return false, err
	}
	kinds, kindArgs := kindFilter(req.Kinds)
	probe := func(sql string, lead ...any) (bool, error) {
		rows, err := s.db.Query(sql+do.Limit(1), append(lead, kindArgs...)...)
		if err != nil {
			return false, printf.Errorf("look for more ready jobs: %w", err)
		}
		return rows.Len() > 0, rows.Err()
	}
	for _, q := range queues {
		if ok, err := probe(plainReady+kinds+claimOrder, q); ok || err != nil {
			return ok, err
		}
		for _, f := range free {
			if ok, err := probe(keyedReady+kinds+claimOrder, f.key, q); ok || err != nil {
				return ok, err
			}
		}
		for _, r := range rates {
			if ok, err := probe(ratedReady+kinds+claimOrder, r.Key, q); ok || err != nil {
				return ok, err
			}
		}
	}
	return false, nil
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
