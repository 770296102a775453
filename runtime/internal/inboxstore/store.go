package inboxstore

import (
	"slices"
	"strings"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/inbox"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// Handler is a registered reaction, as the store needs it.
type Handler struct {
	Name      string
	Kind      string // api.ReactionKindPolicy or api.ReactionKindProcess
	Types     []string
	TimeoutMs int64
	// Overrides, if set, gives the time limit an aggregate sets for the
	// handler's events of its streams ("<aggregate>:<id>"), in place of
	// TimeoutMs (0: none).
	Overrides func(aggregate string) int64
	Backoff   fence.Backoff
	Batch     int  // most deliveries per claim (1 for a process: its state moves with each)
	FromStart bool // a new reaction starts at the beginning of the log, not at its head
}

// TimeoutOf is the handler's time limit for an event of stream.
func (h Handler) TimeoutOf(stream string) int64 {
	if h.Overrides != nil {
		if agg, _, ok := strings.Cut(stream, ":"); ok {
			if ms := h.Overrides(agg); ms > 0 {
				return ms
			}
		}
	}
	return h.TimeoutMs
}

// Delivery is one event handed to one handler.
type Delivery struct {
	Entry     inbox.Entry
	Event     eventstore.Event
	TimeoutMs int64 // the handler's time limit for this event
}

// Store reads and writes the inbox of one tenant.
type Store struct {
	db   *do.DB
	ev   *eventstore.Store
	due  fencestore.DueTracker
	woke bool
	// failing says settles since the last FailingChanged may have changed
	// which deliveries are failing.
	failing bool
	// Watched says the tenant has watchers: only then are changes kept.
	Watched bool
	// changed are the handlers whose deliveries the writes changed, for
	// watchers (Changes).
	changed []string
	// paused and replaying cache the paused reactions and the replays'
	// positions (nil: read them again).
	paused    map[string]bool
	replaying map[string]int64
}

// New returns a store over db; due learns how writes move due times
// (nil: nobody tracks them).
func New(db *do.DB, ev *eventstore.Store, due fencestore.DueTracker) *Store {
	if due == nil {
		due = fencestore.NoTracker
	}
	return &Store{db: db, ev: ev, due: due}
}

// Woke reports, and forgets, whether writes since the last call may have
// made deliveries claimable: held claims should look again.
func (s *Store) Woke() bool {
	w := s.woke
	s.woke = false
	return w
}

// FailingChanged reports, and forgets, whether settles since the last
// call may have changed which deliveries are failing.
func (s *Store) FailingChanged() bool {
	f := s.failing
	s.failing = false
	return f
}

// Wake notes that deliveries may be claimable (new events were appended).
func (s *Store) Wake() { s.woke = true }

// note notes that the deliveries of handler changed.
func (s *Store) note(handler string) {
	if s.Watched && !slices.Contains(s.changed, handler) {
		s.changed = append(s.changed, handler)
	}
}

// Changes reports, and forgets, the handlers whose deliveries the writes
// since the last call changed (claimed, settled, skipped, put back, come
// due). Like Woke, what a transaction that rolled back noted must be
// forgotten by its caller (Changes, or RollbackChanges for a nested one).
func (s *Store) Changes() []string {
	c := s.changed
	s.changed = nil
	return c
}

// ChangesMark is where a nested transaction starts, for RollbackChanges.
func (s *Store) ChangesMark() int { return len(s.changed) }

// RollbackChanges forgets the handlers noted since mark.
func (s *Store) RollbackChanges(mark int) {
	if mark <= len(s.changed) {
		s.changed = s.changed[:mark]
	}
}

// Sync gives every registered handler a checkpoint: a handler new to this
// tenant starts at the log's head (it reacts to what happens from now on),
// or at its beginning with FromStart. Existing checkpoints stay.
func (s *Store) Sync(now int64, hs []Handler) error {
	if len(hs) == 0 {
		return nil
	}
	head, err := s.ev.Head()
	if err != nil {
		return err
	}
	for _, h := range hs {
		cp := head
		if h.FromStart {
			cp = 0
		}
		if err := s.db.Exec(`INSERT INTO stile_reactions (name, checkpoint, created_at, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, h.Name, cp, now, now); err != nil {
			return printf.Errorf("register reaction %s: %w", h.Name, err)
		}
	}
	return nil
}

// Paused are the reactions claims hand nothing out of, read once per
// instance and again after a pause or resume (the instance is the only
// writer).
func (s *Store) Paused() (map[string]bool, error) {
	if err := s.readHolds(); err != nil {
		return nil, err
	}
	return s.paused, nil
}

// Replaying are the reactions a replay runs for, with its position: claims
// hand out none of their deliveries after it, and no new event.
func (s *Store) Replaying() (map[string]int64, error) {
	if err := s.readHolds(); err != nil {
		return nil, err
	}
	return s.replaying, nil
}

// readHolds reads the paused and the replaying reactions, unless known.
func (s *Store) readHolds() error {
	if s.paused != nil {
		return nil
	}
	rows, err := s.db.Query(`SELECT name, paused, coalesce(replay_to, -1) FROM stile_reactions WHERE paused = 1 OR replay_to IS NOT NULL`)
	if err != nil {
		return printf.Errorf("read paused and replaying reactions: %w", err)
	}
	paused, replaying := map[string]bool{}, map[string]int64{}
	for rows.Next() {
		if rows.Int(1) == 1 {
			paused[rows.Text(0)] = true
		}
		if at := rows.Int(2); at >= 0 {
			replaying[rows.Text(0)] = at
		}
	}
	if err := rows.Err(); err != nil {
		return printf.Errorf("read paused and replaying reactions: %w", err)
	}
	s.paused, s.replaying = paused, replaying
	return nil
}

// Forget drops what the store keeps of what it read (a transaction that
// wrote it rolled back).
func (s *Store) Forget() { s.paused, s.replaying = nil, nil }

// SetPaused pauses or resumes a registered reaction. Resuming wakes held
// claims: its events may be claimed again.
func (s *Store) SetPaused(now int64, handler string, paused bool) error {
	s.Forget() // read again from what commits
	p := 0
	if paused {
		p = 1
	}
	rows, err := s.db.Query(`UPDATE stile_reactions SET paused = ?, updated_at = ? WHERE name = ? RETURNING name`, p, now, handler)
	if err != nil {
		return printf.Errorf("pause reaction %s: %w", handler, err)
	}
	if !rows.Next() {
		return printf.Errorf("pause reaction %s: %w", handler, do.ErrNoRow)
	}
	if !paused {
		s.Wake()
	}
	return rows.Err()
}

// running is hs less the paused reactions.
func (s *Store) running(hs []Handler) ([]Handler, error) {
	paused, err := s.Paused()
	if err != nil || len(paused) == 0 {
		return hs, err
	}
	out := make([]Handler, 0, len(hs))
	for _, h := range hs {
		if !paused[h.Name] {
			out = append(out, h)
		}
	}
	return out, nil
}

// Checkpoint reads a handler's checkpoint.
func (s *Store) Checkpoint(name string) (int64, error) {
	rows, err := s.db.Query(`SELECT checkpoint FROM stile_reactions WHERE name = ?`, name)
	if err != nil {
		return 0, printf.Errorf("read the checkpoint of %s: %w", name, err)
	}
	if !rows.Next() {
		return 0, printf.Errorf("read the checkpoint of %s: %w", name, do.ErrNoRow)
	}
	return rows.Int(0), rows.Err()
}

const entryColumns = `handler, seq, state, claim_id, worker, attempt, failures, claimed_at, lease_until,
	COALESCE(run_at, 0), COALESCE(error, ''), COALESCE(outcome, ''), replays`

func scanEntry(r *do.Rows) inbox.Entry {
	return inbox.Entry{Handler: r.Text(0), Seq: r.Int(1), State: inbox.State(r.Text(2)), ClaimID: r.Text(3),
		Worker: r.Text(4), Attempt: r.Int(5), Failures: r.Int(6), ClaimedAt: r.Int(7), LeaseUntil: r.Int(8),
		RunAt: r.Int(9), Error: r.Text(10), Reported: inbox.Outcome(r.Text(11)), Replays: r.Int(12)}
}

// open reads a handler's first n open entries, in event order.
func (s *Store) open(handler string, n int) ([]inbox.Entry, error) {
	return s.openUpTo(handler, n, noBound)
}

// noBound is the bound of a handler no replay holds.
const noBound = 1<<53 - 1 // the largest integer the host's value codec carries

// openUpTo reads a handler's first n open entries up to seq upTo.
func (s *Store) openUpTo(handler string, n int, upTo int64) ([]inbox.Entry, error) {
	// INDEXED BY: without statistics SQLite would walk the primary key
	// through every settled delivery of the handler.
	rows, err := s.db.Query(`SELECT `+entryColumns+` FROM stile_inbox INDEXED BY stile_inbox_open
		WHERE handler = ? AND seq <= ? AND state IN ('pending', 'retry', 'ready') ORDER BY seq`+do.Limit(n), handler, upTo)
	if err != nil {
		return nil, printf.Errorf("read the open deliveries of %s: %w", handler, err)
	}
	var out []inbox.Entry
	for rows.Next() {
		out = append(out, scanEntry(rows))
	}
	return out, rows.Err()
}

// Entry reads the ledger's entry for (handler, seq); nil if none.
func (s *Store) Entry(handler string, seq int64) (*inbox.Entry, error) {
	rows, err := s.db.Query(`SELECT `+entryColumns+` FROM stile_inbox WHERE handler = ? AND seq = ?`, handler, seq)
	if err != nil {
		return nil, printf.Errorf("read delivery %d of %s: %w", seq, handler, err)
	}
	if !rows.Next() {
		return nil, rows.Err()
	}
	e := scanEntry(rows)
	return &e, rows.Err()
}

// EarlierOpen reports whether an event of handler before seq is open.
func (s *Store) EarlierOpen(handler string, seq int64) (bool, error) {
	rows, err := s.db.Query(`SELECT 1 FROM stile_inbox INDEXED BY stile_inbox_open WHERE handler = ? AND seq < ?
		AND state IN ('pending', 'retry', 'ready') LIMIT 1`, handler, seq)
	if err != nil {
		return false, printf.Errorf("read earlier deliveries of %s: %w", handler, err)
	}
	return rows.Len() > 0, nil
}

// Claim hands worker up to limit deliveries, each handler's in event
// order: first what its open head allows again (a lease run out, a retry
// due, and the rest of that claim's run), else its next new events. A
// handler whose head is in flight or waiting is passed over, and so is a
// paused one. A replaying one is handed out only its open deliveries up
// to the replay's position, and no new events.
//
// maxBytes, if not 0, bounds the events' bytes (eventstore's Event.Bytes)
// the claim hands out: new events stop there, a handler's run always goes
// whole (it fitted when it was first handed out), and at least one
// delivery goes.
func (s *Store) Claim(now int64, worker string, hs []Handler, limit int, maxBytes int64) ([]Delivery, error) {
	hs, err := s.running(hs)
	if err != nil {
		return nil, err
	}
	replaying, err := s.Replaying()
	if err != nil {
		return nil, err
	}
	var out []Delivery
	used := int64(0)
	for _, h := range hs {
		if len(out) >= limit || maxBytes > 0 && len(out) > 0 && used >= maxBytes {
			break
		}
		n := min(limit-len(out), max(h.Batch, 1))
		upTo, replay := replaying[h.Name]
		if !replay {
			upTo = noBound
		}
		open, err := s.openUpTo(h.Name, n, upTo)
		if err != nil {
			return nil, err
		}
		var ds []Delivery
		if len(open) > 0 {
			if ds, err = s.reclaim(now, worker, h, open); err != nil {
				return nil, err
			}
			used += deliveryBytes(ds)
			if replay || len(ds) < len(open) || len(ds) == n || maxBytes > 0 && used >= maxBytes {
				out = append(out, ds...)
				continue // the rest waits behind what is still open
			}
		}
		if replay {
			continue // its new events wait for the replay to end
		}
		// Nothing is left open: the handler's next new events, in the
		// same run, held after what it already holds.
		heldUntil := now
		if len(ds) > 0 {
			heldUntil = ds[len(ds)-1].Entry.LeaseUntil
		}
		room := int64(0) // no budget
		if maxBytes > 0 {
			room = maxBytes - used
		}
		more, err := s.deliverNew(now, worker, h, heldUntil, n-len(ds), room, len(out)+len(ds) == 0)
		if err != nil {
			return nil, err
		}
		used += deliveryBytes(more)
		out = append(append(out, ds...), more...)
	}
	return out, nil
}

func deliveryBytes(ds []Delivery) int64 {
	n := int64(0)
	for i := range ds {
		n += ds[i].Event.Bytes()
	}
	return n
}

// reclaim takes over the handler's open head, if its verdict allows, and
// the entries after it that are due too or were handed out with it.
func (s *Store) reclaim(now int64, worker string, h Handler, open []inbox.Entry) ([]Delivery, error) {
	head := open[0]
	if v, _ := inbox.Head(&head, now); v != inbox.Redeliver {
		return nil, nil
	}
	var take []inbox.Entry
	for i, e := range open {
		v, _ := inbox.Head(&e, now)
		sameRun := i > 0 && e.Worker == head.Worker && e.ClaimedAt == head.ClaimedAt &&
			(e.State == inbox.Pending || e.State == inbox.Ready)
		if v != inbox.Redeliver && !sameRun {
			break
		}
		take = append(take, e)
	}
	seqs := make([]int64, len(take))
	for i, e := range take {
		seqs[i] = e.Seq
	}
	ds, err := s.withEvents(take, seqs)
	if err != nil {
		return nil, err
	}
	lease := now
	for i := range ds {
		d := &ds[i]
		e := d.Entry
		d.TimeoutMs = h.TimeoutOf(d.Event.Stream)
		lease += inbox.Held(d.TimeoutMs)
		rows, err := s.db.Query(`UPDATE stile_inbox SET state = 'pending', claim_id = lower(hex(randomblob(16))),
			worker = ?, attempt = attempt + 1, claimed_at = ?, lease_until = ?, run_at = NULL, outcome = NULL
			WHERE handler = ? AND seq = ? AND claim_id = ? AND state IN ('pending', 'retry', 'ready')
			RETURNING claim_id, attempt`, worker, now, lease, h.Name, e.Seq, e.ClaimID)
		if err != nil {
			return nil, printf.Errorf("claim event %d for %s again: %w", e.Seq, h.Name, err)
		}
		if !rows.Next() {
			return nil, printf.Errorf("claim event %d for %s again: %w", e.Seq, h.Name, do.ErrGuard)
		}
		if e.State == inbox.Pending {
			s.due.Removed(e.LeaseUntil)
		} else if e.State == inbox.Retry {
			s.due.Removed(e.RunAt)
		}
		d.Entry.ClaimID, d.Entry.Attempt = rows.Text(0), rows.Int(1)
		d.Entry.State, d.Entry.Worker, d.Entry.ClaimedAt, d.Entry.LeaseUntil, d.Entry.RunAt = inbox.Pending, worker, now, lease, 0
		d.Entry.Reported = ""
		s.due.Added(lease)
		s.note(h.Name)
	}
	return ds, nil
}

// claimRows is how many entries one INSERT carries (6 parameters each).
const claimRows = 16

// deliverNew hands out the handler's next n events after its checkpoint
// and moves the checkpoint past them (compare-and-set). They follow the
// deliveries the claim's run already holds until heldUntil. maxBytes, if
// not 0, stops them at that many bytes; one event larger than that goes
// only if first (the claim has nothing else to hand out).
func (s *Store) deliverNew(now int64, worker string, h Handler, heldUntil int64, n int, maxBytes int64, first bool) ([]Delivery, error) {
	cp, err := s.Checkpoint(h.Name)
	if err != nil {
		return nil, err
	}
	evs, _, err := s.ev.Read(cp, h.Types, n, maxBytes)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	if maxBytes > 0 && !first && evs[0].Bytes() > maxBytes {
		return nil, nil // it waits for a claim of its own
	}
	out := make([]Delivery, 0, len(evs))
	for start := 0; start < len(evs); start += claimRows {
		chunk := evs[start:min(start+claimRows, len(evs))]
		var sql strings.Builder
		sql.WriteString(`INSERT INTO stile_inbox (handler, seq, state, claim_id, worker, attempt, claimed_at, lease_until) VALUES `)
		args := make([]any, 0, 6*len(chunk))
		for i, ev := range chunk {
			if i > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString(`(?, ?, 'pending', lower(hex(randomblob(16))), ?, 1, ?, ?)`)
			heldUntil += inbox.Held(h.TimeoutOf(ev.Stream))
			args = append(args, h.Name, ev.Seq, worker, now, heldUntil)
		}
		sql.WriteString(` RETURNING seq, claim_id, lease_until`)
		s.note(h.Name)
		rows, err := s.db.Query(sql.String(), args...)
		if err != nil {
			return nil, printf.Errorf("deliver events to %s: %w", h.Name, err)
		}
		for i := 0; rows.Next(); i++ {
			ev := chunk[i]
			if rows.Int(0) != ev.Seq {
				return nil, printf.Errorf("deliver events to %s: %w", h.Name, do.ErrGuard)
			}
			e := inbox.Entry{Handler: h.Name, Seq: ev.Seq, State: inbox.Pending, ClaimID: rows.Text(1), Worker: worker,
				Attempt: 1, ClaimedAt: now, LeaseUntil: rows.Int(2)}
			s.due.Added(e.LeaseUntil)
			out = append(out, Delivery{Entry: e, Event: ev, TimeoutMs: h.TimeoutOf(ev.Stream)})
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	last := evs[len(evs)-1].Seq
	rows, err := s.db.Query(`UPDATE stile_reactions SET checkpoint = ?, updated_at = ? WHERE name = ? AND checkpoint = ?
		RETURNING 1`, last, now, h.Name, cp)
	if err != nil {
		return nil, printf.Errorf("move the checkpoint of %s: %w", h.Name, err)
	}
	if rows.Len() != 1 {
		return nil, printf.Errorf("move the checkpoint of %s from %d: %w", h.Name, cp, do.ErrGuard)
	}
	return out, nil
}

func (s *Store) withEvents(es []inbox.Entry, seqs []int64) ([]Delivery, error) {
	evs, err := s.ev.ReadSeqs(seqs)
	if err != nil {
		return nil, err
	}
	if len(evs) != len(es) {
		return nil, printf.Errorf("read %d delivered events, found %d: %w", len(es), len(evs), do.ErrGuard)
	}
	out := make([]Delivery, len(es))
	for i := range es {
		out[i] = Delivery{Entry: es[i], Event: evs[i]}
	}
	return out, nil
}

// Succeed marks e succeeded; e must still hold its claim.
func (s *Store) Succeed(now int64, e inbox.Entry) error {
	if err := s.guarded(`UPDATE stile_inbox SET state = 'succeeded', settled_at = ?, run_at = NULL, error = NULL
		WHERE handler = ? AND seq = ? AND claim_id = ? AND state IN ('pending', 'ready') AND outcome IS NULL RETURNING 1`,
		"settle", e, now, e.Handler, e.Seq, e.ClaimID); err != nil {
		return err
	}
	s.left(e)
	s.woke = true // the handler's next event may go now
	s.failing = s.failing || e.Failures > 0
	return nil
}

// Retry ends e's attempt to run again at runAt, with failures and
// message (a delay: the failures unchanged and no message). The deliveries
// of the handler handed out after e in the same claim are put back, so
// none overtakes it.
func (s *Store) Retry(now int64, e inbox.Entry, runAt, failures int64, msg string) error {
	var m any
	outcome := inbox.OutcomeDelayed
	if msg != "" {
		m, outcome = msg, inbox.OutcomeFailed
	}
	if err := s.guarded(`UPDATE stile_inbox SET state = 'retry', run_at = ?, failures = ?, error = ?, outcome = ?
		WHERE handler = ? AND seq = ? AND claim_id = ? AND state IN ('pending', 'ready') AND outcome IS NULL RETURNING 1`,
		"fail", e, runAt, failures, m, string(outcome), e.Handler, e.Seq, e.ClaimID); err != nil {
		return err
	}
	s.left(e)
	s.due.Added(runAt)
	s.failing = s.failing || msg != ""
	return s.release(e)
}

// release puts back the deliveries handed out with e after it.
func (s *Store) release(e inbox.Entry) error {
	rows, err := s.db.Query(`UPDATE stile_inbox SET state = 'ready' WHERE handler = ? AND seq > ? AND state = 'pending'
		AND worker = ? AND claimed_at = ? RETURNING lease_until`, e.Handler, e.Seq, e.Worker, e.ClaimedAt)
	if err != nil {
		return printf.Errorf("put back the deliveries after event %d of %s: %w", e.Seq, e.Handler, err)
	}
	for rows.Next() {
		s.due.Removed(rows.Int(0))
	}
	return rows.Err()
}

// left tells the due tracker an entry's lease no longer counts.
func (s *Store) left(e inbox.Entry) {
	if e.State == inbox.Pending {
		s.due.Removed(e.LeaseUntil)
	}
}

func (s *Store) guarded(sql, what string, e inbox.Entry, args ...any) error {
	rows, err := s.db.Query(sql, args...)
	if err != nil {
		return printf.Errorf("%s event %d of %s: %w", what, e.Seq, e.Handler, err)
	}
	if rows.Len() != 1 {
		return printf.Errorf("%s event %d of %s: %w", what, e.Seq, e.Handler, do.ErrGuard)
	}
	s.note(e.Handler)
	return nil
}

// Skip marks the handler's open head skipped, with reason, so the handler
// goes on with its next event. Only the head can be skipped.
func (s *Store) Skip(now int64, handler string, seq int64, reason string) (bool, error) {
	open, err := s.open(handler, 1)
	if err != nil {
		return false, err
	}
	if len(open) == 0 || open[0].Seq != seq {
		return false, nil
	}
	e := open[0]
	if err := s.guarded(`UPDATE stile_inbox SET state = 'skipped', settled_at = ?, run_at = NULL, error = ?
		WHERE handler = ? AND seq = ? AND claim_id = ? RETURNING 1`, "skip", e, now, "skipped: "+reason, handler, seq, e.ClaimID); err != nil {
		return false, err
	}
	s.due.Unknown()
	s.woke = true
	s.failing = s.failing || e.Failures > 0
	return true, s.release(e)
}

// ApplyDue makes deliveries whose lease ran out or whose retry came due
// ready, so held claims wake and the alarm moves on.
func (s *Store) ApplyDue(now int64) error {
	rows, err := s.db.Query(`UPDATE stile_inbox SET state = 'ready', error = 'the lease of attempt ' || attempt || ' ran out'
		WHERE state = 'pending' AND lease_until <= ? RETURNING handler`, now)
	if err != nil {
		return printf.Errorf("expire reaction leases: %w", err)
	}
	n := rows.Len()
	for rows.Next() {
		s.note(rows.Text(0))
	}
	rows, err = s.db.Query(`UPDATE stile_inbox SET state = 'ready', run_at = NULL WHERE state = 'retry' AND run_at <= ? RETURNING handler`, now)
	if err != nil {
		return printf.Errorf("make due reaction retries ready: %w", err)
	}
	for rows.Next() {
		s.note(rows.Text(0))
	}
	if n+rows.Len() > 0 {
		s.woke = true
		s.due.Unknown()
	}
	return nil
}

// NextDue is the earliest time the inbox, the scheduled commands or the
// deadlines have work due, or 0.
func (s *Store) NextDue() (int64, error) {
	const never = 1<<53 - 1
	rows, err := s.db.Query(`SELECT MIN(
		COALESCE((SELECT MIN(lease_until) FROM stile_inbox WHERE state = 'pending'), ?1),
		COALESCE((SELECT MIN(run_at) FROM stile_inbox WHERE state = 'retry'), ?1),
		COALESCE((SELECT MIN(at) FROM stile_scheduled_commands WHERE state = 'scheduled'), ?1),
		COALESCE((SELECT MIN(at) FROM stile_deadlines), ?1))`, never)
	if err != nil {
		return 0, printf.Errorf("compute the reactions' next due time: %w", err)
	}
	rows.Next()
	at := rows.Int(0)
	if at >= never {
		return 0, rows.Err()
	}
	return at, rows.Err()
}

// Claimable reports whether a claim for h would hand out a delivery at
// now (never while h is paused): its open head may be delivered again (a lease ran out, a retry came
// due), or nothing is open and events wait past its checkpoint. It reads
// the head through the open index and at most one event per type: what
// is ready, never what was settled.
func (s *Store) Claimable(now int64, h Handler) (bool, error) {
	if paused, err := s.Paused(); err != nil || paused[h.Name] {
		return false, err
	}
	upTo, replay := s.replaying[h.Name]
	if !replay {
		upTo = noBound
	}
	open, err := s.openUpTo(h.Name, 1, upTo)
	if err != nil {
		return false, err
	}
	if len(open) > 0 {
		v, _ := inbox.Head(&open[0], now)
		return v == inbox.Redeliver, nil
	}
	if replay {
		return false, nil // its new events wait for the replay to end
	}
	cp, err := s.Checkpoint(h.Name)
	if err != nil {
		return false, err
	}
	n, err := s.ev.CountAfter(cp, h.Types, 1)
	return n > 0, err
}

// Status is a handler's checkpoint, lag and first open deliveries.
type Status struct {
	Checkpoint int64
	Lag        int64
	Open       []inbox.Entry
}

// Status reads h's status; lag is counted up to maxLag.
func (s *Store) Status(h Handler, maxLag int64, maxOpen int) (Status, error) {
	cp, err := s.Checkpoint(h.Name)
	if err != nil {
		return Status{}, err
	}
	lag, err := s.ev.CountAfter(cp, h.Types, maxLag)
	if err != nil {
		return Status{}, err
	}
	open, err := s.open(h.Name, maxOpen)
	return Status{Checkpoint: cp, Lag: lag, Open: open}, err
}
