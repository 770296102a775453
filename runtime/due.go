package runtime

import (
	"errors"
	mrand "math/rand/v2"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/cron"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// Due work: what a tenant must do once its time comes, whoever notices
// first — the alarm, or any request, which applies due work in its
// transaction before its own (a claim treats an expired lease as expired
// whether or not the alarm ran). Jobs' expired leases, run_at and retries
// (fencestore.ApplyDue), schedules' periods, reactions' retries, delays,
// deadlines and scheduled commands, and projections' catch-up. The alarm
// is set to the earliest due time of committed state, tracked by dueCache.

// dueCache tracks the earliest due time (0: nothing is due, ever) and,
// when it can, how many of the job store's items are due then: jobs
// claimed together share their lease's end, and the reports of all but the
// last of them leave the earliest time where it is, with no re-read.
type dueCache struct {
	at    int64
	known bool
	// n counts the items due at at, when counted; uncounted (the
	// reactions' earliest is the same time, whose items are not tracked
	// one by one), removing one at at means reading again.
	n       int64
	counted bool
}

// Added implements fencestore.DueTracker.
func (d *dueCache) Added(at int64) {
	switch {
	case !d.known:
	case d.at == 0 || at < d.at:
		d.at, d.n, d.counted = at, 1, true
	case at == d.at && d.counted:
		d.n++
	}
}

// Removed implements fencestore.DueTracker: if the earliest went, re-read,
// unless others are counted due at the same time.
func (d *dueCache) Removed(at int64) {
	switch {
	case !d.known || at > d.at:
	case at == d.at && d.counted && d.n > 1:
		d.n--
	default:
		d.known = false
	}
}

// Unknown implements fencestore.DueTracker.
func (d *dueCache) Unknown() { d.known = false }

// alarmAt is the tenant's next alarm: the earliest due work of the jobs,
// the reactions and the projections.
func (t *Tenant) alarmAt() int64 {
	at := t.due.at
	if t.proj.due != 0 && (at == 0 || t.proj.due < at) {
		at = t.proj.due
	}
	if t.retain.due != 0 && (at == 0 || t.retain.due < at) {
		at = t.retain.due
	}
	if t.executors.pushes != nil {
		if p := t.executors.pushes.NextAt(); p != 0 && (at == 0 || p < at) {
			at = p
		}
	}
	if u := t.usageAlarm(); u != 0 && (at == 0 || u < at) {
		at = u
	}
	if f := t.fail.due(); f != 0 && t.name != "" && (at == 0 || f < at) {
		at = f
	}
	return at
}

func (t *Tenant) applyDue(c *call) error {
	now := c.now
	if !t.due.known {
		// Two reads, where applying every kind of due work blindly is
		// seven statements: on a new instance, mostly nothing is due yet.
		if err := t.refreshDue(); err != nil {
			return err
		}
	}
	if t.due.at == 0 || now < t.due.at {
		return nil
	}
	c.dueApplied = true
	res, err := t.store.ApplyDue(now, c.noticedBy, mrandFloat)
	if err != nil {
		return err
	}
	c.dueEnded = c.dueEnded || res.Expired > 0
	if err := t.tickSchedules(now); err != nil {
		return err
	}
	if c.noticedBy == "alarm" {
		// Only the alarm runs bulk operations' slices: a request pays for
		// its own work, and a slice that fails fails the alarm's
		// transaction (to run again), never a caller's.
		if err := t.runOperations(now); err != nil {
			return err
		}
	}
	return t.applyReactionsDue(now)
}

// refreshDue re-reads the earliest due time if the cache lost it.
func (t *Tenant) refreshDue() error {
	if t.due.known {
		return nil
	}
	d, err := t.readDue()
	if err != nil {
		return err
	}
	t.due = d
	return nil
}

// nextDue reads the earliest due time of the jobs and the reactions from
// storage (0: nothing is due).
func (t *Tenant) nextDue() (int64, error) {
	d, err := t.readDue()
	return d.at, err
}

// readDue reads the earliest due time from storage, with the count of the
// job store's items due then when the reactions have nothing as early.
func (t *Tenant) readDue() (dueCache, error) {
	at, n, err := t.store.NextDue()
	if err != nil {
		return dueCache{}, err
	}
	rat, err := t.reactions.NextDue()
	if err != nil {
		return dueCache{}, err
	}
	d := dueCache{at: at, known: true, n: n, counted: at != 0}
	if rat != 0 && (at == 0 || rat <= at) {
		d.at, d.counted = rat, false
	}
	return d, nil
}

// mrandFloat is jitter for retry backoffs; it needs spread, not secrecy.
func mrandFloat() float64 { return mrand.Float64() }

func (t *Tenant) tickSchedules(now int64) error {
	due, err := t.store.DueSchedules(now, scheduleBatch)
	if err != nil {
		return err
	}
	for _, sc := range due {
		if err := t.tick(now, sc); err != nil {
			return err
		}
	}
	return nil
}

func (t *Tenant) tick(now int64, sc fencestore.Schedule) error {
	period := sc.NextAt
	s, err := cron.Parse(sc.Cron)
	if err != nil { // validated when written; only a changed parser gets here
		return t.store.AdvanceSchedule(now, sc.Name, period, now+time.Hour.Milliseconds(), 0, err.Error())
	}
	next := s.Next(time.UnixMilli(now)).UnixMilli()
	n, bad := t.scheduledJob(sc.Name, sc.Job, period)
	if bad != nil {
		// The module no longer accepts the job (its kind was removed, say):
		// the period is recorded with the reason, not retried forever.
		return t.store.AdvanceSchedule(now, sc.Name, period, next, 0, bad.Message)
	}
	n.RunAt = now
	js, err := t.store.Enqueue(now, []fencestore.NewJob{n})
	var ref *api.Error
	if errors.As(err, &ref) {
		return t.store.AdvanceSchedule(now, sc.Name, period, next, 0, ref.Message)
	}
	if err != nil {
		return printf.Errorf("schedule %q: %w", sc.Name, err)
	}
	return t.store.AdvanceSchedule(now, sc.Name, period, next, js[0].ID, "")
}

// applyReactionsDue readies reaction deliveries whose time came, applies
// scheduled commands that are due and fires due process deadlines, each
// exactly once: in the transaction that records it done.
func (t *Tenant) applyReactionsDue(now int64) error {
	if len(t.app.reactions) == 0 && len(t.app.aggregates) == 0 {
		return nil
	}
	if err := t.reactions.ApplyDue(now); err != nil {
		return err
	}
	cmds, err := t.reactions.DueCommands(now, dueBatch)
	if err != nil {
		return err
	}
	for _, sc := range cmds {
		if err := t.fireScheduled(now, sc); err != nil {
			return err
		}
	}
	ds, err := t.reactions.TakeDueDeadlines(now, dueBatch)
	if err != nil {
		return err
	}
	for _, d := range ds {
		typ := api.DeadlineEventPrefix + d.Process
		data := api.DeadlineFired{Process: d.Process, Correlation: d.Correlation, Name: d.Name, At: ts(d.At)}.AppendJSON(nil)
		if _, _, _, err := t.events.Append(now, typ, eventstore.Any, []eventstore.Draft{{Type: typ, Data: data}}, ""); err != nil {
			return err
		}
		t.reactions.Wake()
	}
	return nil
}

// fireScheduled applies one due command; one its aggregate refuses (or
// that is no longer valid for the module) is recorded rejected.
func (t *Tenant) fireScheduled(now int64, sc inboxstore.ScheduledCommand) error {
	c, err := api.DecodeCommand(sc.Command)
	msg := ""
	if err != nil {
		msg = "the stored command is unreadable: " + err.Error()
	} else if e := t.validateCommand("", c); e != nil {
		msg = e.Message
	}
	if msg == "" {
		ref, err := t.refusable(func() (*api.Error, error) {
			_, ref, err := t.runCommand(now, c, "scheduled:"+sc.Source)
			return ref, err
		})
		switch {
		case ref != nil:
			msg = ref.Message
		case err != nil:
			return err
		}
	}
	return t.reactions.FinishScheduled(now, sc.ID, msg)
}

// projectionsDue reads when projection work is next due: now if a
// generation has events to apply (or a rebuild to swap in), a stalled
// one's retry time, or 0. gens are the generations as stored, or nil to
// read them.
func (t *Tenant) projectionsDue(now int64, gens []projectionstore.Generation) (int64, error) {
	if gens == nil {
		var err error
		if gens, err = t.projections.All(); err != nil {
			return 0, err
		}
	}
	next := int64(0)
	for _, g := range gens {
		p, ok := t.app.projectionBy[g.Name]
		if !ok || g.Fingerprint != p.fingerprint {
			continue
		}
		at := g.RetryAt
		if !g.Stalled() {
			behind, err := t.events.CountAfter(g.Checkpoint, p.Events, 1)
			if err != nil {
				return 0, err
			}
			if behind == 0 && g.Role == projectionstore.Live {
				continue
			}
			at = now
		}
		if next == 0 || at < next {
			next = at
		}
	}
	return next, nil
}
