package runtime

import (
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/usage"
)

// Usage and budgets (runtime/internal/usage decides; this file wires it):
// the host hands its running count in on every call (stile-usage), the
// module adds the pushes it sends, and a transaction writes the day's row
// when what is pending has waited usage.FlushEvery (30 s) where the host
// keeps its count, usage.TailEvery (5 s) at the edge, where an alarm
// records an idle tenant's last requests before its instance may leave
// memory.

// meter is the tenant's usage as this instance knows it.
type meter struct {
	// loaded says last and own were read from storage.
	loaded bool
	// last is the newest day's row as committed: what was recorded, and
	// the host's count it recorded last.
	last usage.Recorded
	// held is the host's figures since last.Mark, as the latest call's
	// stile-usage said, and mode how the host keeps them; pending what
	// else is pending, and since when.
	held    api.Usage
	mode    usage.Mode
	pending usage.Pending
	// recordedAt is when this instance last recorded (0: not yet).
	recordedAt int64
	// own is the tenant's own budget (PUT /budget); nil: the module's.
	own *api.Budget
	// noted is when this instance last told the directory the tenant's
	// usage (0: never).
	noted int64
}

// usageSchema is the migration that made stile_usage.
const usageSchema = 16

// settingBudget keeps the tenant's own budget, as JSON.
const settingBudget = "budget"

// DailyBudget sets the budget of every tenant that sets none of its own
// (PUT /v1/t/{tenant}/budget): past either figure in a UTC day, its new
// work (enqueues, commands, appends, transactions) is refused with 429
// and Retry-After until the day ends. Work already started (claims,
// heartbeats, reports, settlements) and reads go on. 0 is no limit.
func (a *App) DailyBudget(b api.Budget) *App {
	if e := b.Check(); e != nil {
		panic("stile: DailyBudget: " + e.Message)
	}
	a.budget = b
	return a
}

// metered says the tenant's storage keeps usage and may be written.
func (t *Tenant) metered() bool {
	return t.life.exists && t.schema.migrated && !t.schema.stileBlocked && t.schema.stile.Version >= usageSchema
}

// budget is the budget in force.
func (t *Tenant) budget() api.Budget {
	if t.meter.own != nil {
		return *t.meter.own
	}
	return t.app.budget
}

// meterCall reads the host's count on an admitted call at now: what it
// counted since the last record is pending from now on.
func (t *Tenant) meterCall(c *call) error {
	if !t.metered() {
		return nil
	}
	if !t.meter.loaded {
		last, err := usage.Latest(t.db)
		if err != nil {
			return err
		}
		own, err := t.ownBudget()
		if err != nil {
			return err
		}
		t.meter.last, t.meter.own, t.meter.loaded = last, own, true
	}
	t.meter.held, t.meter.mode = usage.Since(t.meter.last.Mark, c.mark), c.mark.Mode
	t.meter.pending.Saw(t.meter.held, c.now)
	return nil
}

// ownBudget reads the tenant's own budget (nil: none).
func (t *Tenant) ownBudget() (*api.Budget, error) {
	v, ok, err := t.setting(settingBudget)
	if err != nil || !ok {
		return nil, err
	}
	b, err := api.DecodeBudget([]byte(v))
	if err != nil {
		return nil, printf.Errorf("read the tenant's budget: %w", err)
	}
	return &b, nil
}

// today is the tenant's usage on now's UTC day: recorded and pending.
// What is pending since an earlier day is that day's (recordUsage records
// it there), so a tenant refused before midnight is not refused after it.
func (t *Tenant) today(now int64) api.Usage {
	var u api.Usage
	day := usage.Day(now)
	if p := t.meter.pending; p.Since == 0 || usage.Day(p.Since) == day {
		u = p.Add(t.meter.held)
	}
	if t.meter.last.Day == day {
		u = usage.Add(u, t.meter.last.Usage)
	}
	return u
}

// budgeted are the routes a budget refuses: new work. Reports,
// settlements, heartbeats and claims always go on.
func budgeted(r api.Route) bool {
	switch r {
	case api.RouteEnqueue, api.RouteEnqueueMany, api.RouteTx, api.RouteAppend, api.RouteCommand:
		return true
	}
	return false
}

// overBudget refuses new work past the tenant's budget (admit, once
// meterCall read the host's count at c.now), with Retry-After.
func (t *Tenant) overBudget(c *call) *do.Response {
	if c.req.Kind != do.KindAPI || !budgeted(c.route) || !t.metered() {
		return nil
	}
	e, retryAfter, over := usage.Refusal(t.name, t.budget(), t.today(c.now), c.now)
	if !over {
		return nil
	}
	resp := errorResponse(e)
	resp.Headers = append(resp.Headers, do.Header{Name: "retry-after", Value: strconv.FormatInt(retryAfter, 10)})
	return &resp
}

// recordUsage writes what is pending into its day's row, inside the
// request's transaction, when it has waited long enough (usage.Due); the
// tenant takes it as recorded once the transaction commits (usageCommitted).
func (t *Tenant) recordUsage(c *call) error {
	if !t.metered() || !t.meter.loaded || !usage.Due(t.meter.pending, t.meter.held, c.mark.Mode, c.now, c.req.Kind == do.KindAlarm, t.meter.recordedAt) {
		return nil
	}
	day := usage.Day(t.meter.pending.Since)
	u := t.meter.pending.Add(t.meter.held)
	rec := usage.Recorded{Day: day, Usage: u, Mark: c.mark}
	if t.meter.last.Day == day {
		rec.Usage = usage.Add(rec.Usage, t.meter.last.Usage)
	}
	if err := usage.Record(t.db, day, u, c.mark, t.meter.last.Day != day); err != nil {
		return err
	}
	c.recorded = &rec
	return nil
}

// usageCommitted takes what the request's transaction recorded as
// recorded, once it committed.
func (t *Tenant) usageCommitted(c *call) {
	if c.recorded == nil || !c.committed {
		return
	}
	t.meter.last, t.meter.held, t.meter.pending, t.meter.recordedAt = *c.recorded, api.Usage{}, usage.Pending{}, c.now
}

// usageNote is the usage to tell the directory with this response: what
// the request recorded, when the directory last heard of it
// usage.NoteEvery ago or on an earlier day (Day "": nothing to tell).
func (t *Tenant) usageNote(c *call) api.UsageDay {
	if c.recorded == nil || !c.committed || !usage.NoteDue(t.meter.noted, c.now) {
		return api.UsageDay{}
	}
	t.meter.noted = c.now
	return api.UsageDay{Day: t.meter.last.Day, Usage: t.meter.last.Usage}
}

// usageAlarm is when the tenant wants an alarm to record what is pending.
func (t *Tenant) usageAlarm() int64 {
	return usage.AlarmAt(t.meter.pending, t.meter.held, t.meter.mode)
}

// getUsage answers GET /usage?from=&to=: the recorded days, today's with
// what is pending.
func (t *Tenant) getUsage(raw string) (route, *api.Error) {
	q, e := query(raw)
	if e != nil {
		return nil, e
	}
	if e := onlyParams(q, "from", "to"); e != nil {
		return nil, e
	}
	from, to := q["from"], q["to"]
	for _, d := range []string{from, to} {
		if d == "" {
			continue
		}
		if err := usage.ParseDay(d); err != nil {
			return nil, api.Refuse(api.CodeInvalidRequest, "usage: %v", err)
		}
	}
	if from != "" && to != "" && from > to {
		return nil, api.Refuse(api.CodeInvalidRequest, "usage: from %s is after to %s", from, to)
	}
	return func(now int64) (result, error) {
		today := usage.Day(now)
		to, from := to, from
		if to == "" {
			to = today
		}
		if from == "" {
			from = usage.AddDays(to, 1-usage.DefaultDays)
		}
		if from < usage.AddDays(to, -usage.KeepDays) {
			return result{}, api.Refuse(api.CodeInvalidRequest, "usage: from %s to %s spans more than the %d days a tenant keeps", from, to, usage.KeepDays)
		}
		resp := api.UsageResponse{Tenant: t.name, From: from, To: to, Budget: t.budget()}
		if t.metered() {
			days, err := usage.Days(t.db, from, to)
			if err != nil {
				return result{}, err
			}
			resp.Days = days
			if pending := t.meter.pending.Add(t.meter.held); !usage.Zero(pending) && from <= today && today <= to {
				resp.Days = withPending(resp.Days, today, pending)
			}
		}
		for _, d := range resp.Days {
			resp.Total = usage.Add(resp.Total, d.Usage)
		}
		if figure, used, limit, over := usage.Over(resp.Budget, t.today(now)); over {
			until := ts(usage.DayEnd(now))
			resp.Refusing, resp.RefusingUntil = printf.Sprintf("%s %d; %d used today", figure, limit, used), &until
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}, nil
}

// withPending adds pending to today's day in days, which are in order.
func withPending(days []api.UsageDay, today string, pending api.Usage) []api.UsageDay {
	if n := len(days); n > 0 && days[n-1].Day == today {
		days[n-1].Usage = usage.Add(days[n-1].Usage, pending)
		return days
	}
	return append(days, api.UsageDay{Day: today, Usage: pending})
}

// putBudget answers PUT /budget: the tenant's own budget, in place of the
// module's.
func (t *Tenant) putBudget(c *call, body []byte) (route, *api.Error) {
	b, err := api.DecodeBudget(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := b.Check(); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		if err := t.setSetting(now, settingBudget, string(b.AppendJSON(nil))); err != nil {
			return result{}, err
		}
		c.budget = &pendingBudget{own: &b}
		return result{status: statusOK, body: api.BudgetResponse{Effective: b, Module: t.app.budget, Overridden: true}.AppendJSON}, nil
	}, nil
}

// deleteBudget answers DELETE /budget: the tenant follows the module's.
func (t *Tenant) deleteBudget(c *call) route {
	return func(int64) (result, error) {
		if err := t.clearSetting(settingBudget); err != nil {
			return result{}, err
		}
		c.budget = &pendingBudget{}
		return result{status: statusOK, body: api.BudgetResponse{Effective: t.app.budget, Module: t.app.budget}.AppendJSON}, nil
	}
}

// pendingBudget is a PUT or DELETE /budget not yet committed.
type pendingBudget struct{ own *api.Budget }

// settleBudget puts in force the budget a request changed, once its
// transaction committed.
func (t *Tenant) settleBudget(c *call) {
	if c.budget != nil && c.committed {
		t.meter.own = c.budget.own
	}
}
