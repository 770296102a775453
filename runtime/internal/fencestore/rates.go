package fencestore

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/printf"
)

// Rate is a rate key's limit, where it stands and what it did.
type Rate struct {
	Key string
	flow.Rate
	// Source is who set the limit: "module" (its default, followed when
	// the module changes it) or "tenant" (PUT /rates/{key}).
	Source string
	Window flow.Window
	// OpenAt is when the key next has room (<= now: now); WakeAt, if not
	// 0, when the alarm wakes the claims that wait on it.
	OpenAt, WakeAt int64
	// Started counts the starts of the key's jobs; Limited the times its
	// jobs had to wait for room.
	Started, Limited int64
	// stored is Window as its row holds it: what the claim that rewrites
	// the window expects to find there (the text it read, not encoded
	// again).
	stored string
}

// Sources of a rate limit.
const (
	RateFromModule = "module"
	RateFromTenant = "tenant"
)

const rateColumns = `key, max_starts, period_ms, source, starts, open_at, coalesce(wake_at, 0), started, limited`

// scanRate reads a row of rateColumns; a module's default overrides the
// stored copy of an older one (the module is the source of its defaults).
func (s *Store) scanRate(r *do.Rows) (Rate, error) {
	rt := Rate{Key: s.intern(r.TextBytes(0)), Rate: flow.Rate{Limit: r.Int(1), PeriodMs: r.Int(2)}, Source: s.intern(r.TextBytes(3)),
		OpenAt: r.Int(5), WakeAt: r.Int(6), Started: r.Int(7), Limited: r.Int(8)}
	if d, ok := s.Rates[rt.Key]; ok && rt.Source == RateFromModule {
		rt.Rate = d
	}
	rt.stored = r.Text(4)
	w, err := flow.Decode(rt.stored)
	if err != nil {
		return Rate{}, printf.Errorf("rate key %q: %w", rt.Key, err)
	}
	rt.Window = w
	return rt, nil
}

// GetRate reads one rate key (ok false: it has no row).
func (s *Store) GetRate(key string) (Rate, bool, error) {
	rs, err := s.readRates(`SELECT `+rateColumns+` FROM stile_rates WHERE key = ?`, key)
	if err != nil || len(rs) == 0 {
		return Rate{}, false, err
	}
	return rs[0], true, nil
}

// ListRates reads every rate key, in key order.
func (s *Store) ListRates() ([]Rate, error) {
	return s.readRates(`SELECT ` + rateColumns + ` FROM stile_rates ORDER BY key`)
}

// readRates reads the rate keys a statement of rateColumns selects.
func (s *Store) readRates(sql string, args ...any) ([]Rate, error) {
	rows, err := s.db.Query(sql, args...)
	if err != nil {
		return nil, printf.Errorf("read rate limits: %w", err)
	}
	var out []Rate
	for rows.Next() {
		rt, err := s.scanRate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rt)
	}
	return out, rows.Err()
}

// SetRate sets key's limit (source: RateFromModule or RateFromTenant).
// The starts already counted stay: a lowered limit waits until enough of
// them left the window, a raised one lets waiting jobs start at once.
func (s *Store) SetRate(now int64, key string, r flow.Rate, source string) (Rate, error) {
	old, _, err := s.GetRate(key)
	if err != nil {
		return Rate{}, err
	}
	w := old.Window
	rt := Rate{Key: key, Rate: r, Source: source, Window: w, Started: old.Started, Limited: old.Limited}
	rt.OpenAt, rt.WakeAt = s.opening(now, rt)
	rows, err := s.db.Query(`INSERT INTO stile_rates (key, max_starts, period_ms, source, starts, open_at, wake_at, updated_at)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
		ON CONFLICT (key) DO UPDATE SET max_starts = ?2, period_ms = ?3, source = ?4, open_at = ?6, wake_at = ?7, updated_at = ?8
		RETURNING key`, key, r.Limit, r.PeriodMs, source, w.Encode(), rt.OpenAt, nullIfZero(rt.WakeAt), now)
	if err != nil {
		return Rate{}, printf.Errorf("set the rate limit of %q: %w", key, err)
	}
	if !rows.Next() {
		return Rate{}, printf.Errorf("set the rate limit of %q: %w", key, do.ErrGuard)
	}
	s.ratesKnown = 2
	if rt.OpenAt <= now {
		s.wakeAll() // a raised limit may let waiting jobs start
	}
	s.due.Unknown()
	return rt, rows.Err()
}

// opening is when rt's key next has room, and when the alarm must wake
// the claims waiting for it (0: it has room now).
func (s *Store) opening(now int64, rt Rate) (openAt, wakeAt int64) {
	openAt = flow.Next(rt.Window, rt.Rate, now)
	if openAt > now {
		return openAt, openAt
	}
	return openAt, 0
}

// DeleteRate removes the tenant's limit of key. A key the module declares
// goes back to the module's default; any other is removed, unless a job
// not finished yet names it (it would wait for a limit forever).
func (s *Store) DeleteRate(now int64, key string) (rt Rate, removed bool, err error) {
	if _, ok, err := s.GetRate(key); err != nil || !ok {
		if err == nil {
			err = api.Refuse(api.CodeNotFound, "rate key %q has no limit", key)
		}
		return Rate{}, false, err
	}
	if d, ok := s.Rates[key]; ok {
		rt, err := s.SetRate(now, key, d, RateFromModule)
		return rt, false, err
	}
	// A job not finished is ready, running, or in a state stile_jobs_listed
	// holds: each read along its own index, never the whole table.
	rows, err := s.db.Query(`SELECT id FROM stile_jobs WHERE `+readyRated+` AND rate_key = ?1
		UNION ALL SELECT id FROM stile_jobs WHERE state = 'running' AND rate_key = ?1
		UNION ALL SELECT id FROM stile_jobs WHERE `+listed+` AND state IN ('pending', 'scheduled', 'retryable') AND rate_key = ?1
		LIMIT 1`, key)
	if err != nil {
		return Rate{}, false, printf.Errorf("look for jobs of rate key %q: %w", key, err)
	}
	if rows.Next() {
		return Rate{}, false, api.Refuse(api.CodeRateKeyInUse, "rate key %q is named by job %d, not finished yet: set another limit with PUT instead, or cancel its jobs first", key, rows.Int(0))
	}
	if err := s.db.Exec(`DELETE FROM stile_rates WHERE key = ?`, key); err != nil {
		return Rate{}, false, printf.Errorf("delete the rate limit of %q: %w", key, err)
	}
	s.ratesKnown = 0
	s.due.Unknown()
	return Rate{Key: key}, true, nil
}

// ensureRate makes sure key has a limit: the tenant's, else the module's
// default, else the enqueue is refused. It reports whether the key has
// room now (a job of a key without room is not worth waking a claim for:
// the alarm wakes them when it opens).
func (s *Store) ensureRate(now int64, key string) (open bool, err error) {
	rows, err := s.db.Query(`SELECT open_at FROM stile_rates WHERE key = ?`, key)
	if err != nil {
		return false, printf.Errorf("read the rate limit of %q: %w", key, err)
	}
	if rows.Next() {
		return rows.Int(0) <= now, rows.Err()
	}
	d, ok := s.Rates[key]
	if !ok {
		return false, api.Refuse(api.CodeInvalidRequest, "rate key %q has no limit: set one with PUT /v1/t/{tenant}/rates/%s or declare it in the module (App.RateLimit)", key, key)
	}
	rt, err := s.SetRate(now, key, d, RateFromModule)
	return rt.OpenAt <= now, err
}

// openRate is a rate key with room, as a claim reads it.
type openRate struct {
	Rate
	room int64
}

// MaxRatedKeysRead bounds the rate keys with ready jobs a claim looks at
// (the first in key order); of those, MaxKeysPerClaim with room are taken.
const MaxRatedKeysRead = 1000

// openRates lists up to MaxKeysPerClaim rate keys with ready jobs and room
// at now, least recently started first (every key gets its turn), with
// the room each has.
func (s *Store) openRates(now int64) ([]openRate, error) {
	if s.ratesKnown == 0 {
		rows, err := s.db.Query(`SELECT EXISTS (SELECT 1 FROM stile_rates)`)
		if err != nil {
			return nil, printf.Errorf("look for rate keys: %w", err)
		}
		s.ratesKnown = 1
		if rows.Next() && rows.Int(0) == 1 {
			s.ratesKnown = 2
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if s.ratesKnown == 1 {
		return nil, nil // no rate key: nothing to read, claim after claim
	}
	// The keys with ready jobs, one seek each into the rated range, then
	// their rows: a key without jobs is never read, however many there
	// are, and a key's room is computed from its window by the limit in
	// force (a module's new default included).
	rs, err := s.readRates(`WITH RECURSIVE k(key) AS (
		SELECT (SELECT rate_key FROM stile_jobs WHERE ` + readyRated + ` ORDER BY rate_key LIMIT 1)
		UNION ALL SELECT (SELECT rate_key FROM stile_jobs WHERE ` + readyRated + ` AND rate_key > k.key ORDER BY rate_key LIMIT 1)
		FROM k WHERE k.key IS NOT NULL` + do.Limit(MaxRatedKeysRead) + `)
		SELECT ` + rateColumns + ` FROM stile_rates WHERE key IN (SELECT key FROM k WHERE key IS NOT NULL) ORDER BY updated_at`)
	if err != nil {
		return nil, err
	}
	var out []openRate
	for _, rt := range rs {
		if room := flow.Allowance(rt.Window, rt.Rate, now); room > 0 && len(out) < MaxKeysPerClaim {
			out = append(out, openRate{rt, room})
		}
	}
	return out, nil
}

// takeStarts counts n starts of rt's key at now. When they leave the key
// without room, the key closes until its next start is allowed, and the
// alarm is due then to wake the claims that wait (counted as limited when
// jobs wait).
func (s *Store) takeStarts(now int64, rt Rate, n int64) error {
	rt.Window = flow.Take(rt.Window, rt.Rate, now, n)
	openAt, wakeAt := s.opening(now, rt)
	limited := 0
	if wakeAt != 0 {
		rows, err := s.db.Query(`SELECT 1 FROM stile_jobs WHERE `+readyRated+` AND rate_key = ? LIMIT 1`, rt.Key)
		if err != nil {
			return printf.Errorf("look for jobs waiting on rate key %q: %w", rt.Key, err)
		}
		if rows.Next() {
			limited = 1
		}
		s.due.Added(wakeAt)
	}
	rows, err := s.db.Query(`UPDATE stile_rates SET starts = ?, open_at = ?, wake_at = ?, started = started + ?,
		limited = limited + ?, updated_at = ? WHERE key = ? AND starts = ? RETURNING key`,
		rt.Window.Encode(), openAt, nullIfZero(wakeAt), n, limited, now, rt.Key, rt.stored)
	if err != nil {
		return printf.Errorf("count %d starts of rate key %q: %w", n, rt.Key, err)
	}
	if !rows.Next() {
		return printf.Errorf("count %d starts of rate key %q: %w", n, rt.Key, do.ErrGuard)
	}
	return rows.Err()
}

// wakeRates clears the wake times that came, and wakes every held claim
// if one did: the jobs of a key that opened may start.
func (s *Store) wakeRates(now int64) error {
	rows, err := s.db.Query(`UPDATE stile_rates SET wake_at = NULL WHERE wake_at IS NOT NULL AND wake_at <= ? RETURNING key`, now)
	if err != nil {
		return printf.Errorf("wake the rate keys that opened: %w", err)
	}
	if rows.Len() > 0 {
		s.wakeAll()
		s.due.Unknown()
	}
	return rows.Err()
}

func nullIfZero(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}
