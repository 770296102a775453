package runtime

import (
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/cron"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// Schedules: each period of a cron expression enqueues one job, exactly
// once. A period is handled in the transaction that advances the schedule
// past it, guarded on the period it read, so an alarm that fires twice or
// late enqueues nothing twice. Periods missed while the object was idle
// (nobody called, the alarm was late) are run once, not once each: the
// first missed period enqueues a job at once and the schedule resumes at
// the next period after now.

// scheduleBatch bounds the schedules ticked per request.
const scheduleBatch = 100

// scheduledJob builds the job a schedule's period enqueues: the stored
// request, validated against the module as it is now, made unique to the
// period and tagged with the schedule.
func (t *Tenant) scheduledJob(name string, template []byte, period int64) (fencestore.NewJob, *api.Error) {
	r, err := api.DecodeEnqueue(template)
	if err != nil {
		return fencestore.NewJob{}, decodeErr(err)
	}
	r.Tags = append(r.Tags, "schedule:"+name)
	n, e := t.validateEnqueue(-1, r)
	if e != nil {
		return n, e
	}
	n.UniqueKey = printf.Sprintf("schedule:%s:%d", name, period)
	return n, nil
}

func (t *Tenant) putSchedule(name string, body []byte) (route, *api.Error) {
	if !api.ValidName(name) {
		return nil, api.Refuse(api.CodeInvalidRequest, "schedule name %q is invalid: use %s", name, api.NameRule)
	}
	r, jf, err := api.DecodeScheduleFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	s, err := cron.Parse(r.Cron)
	if err != nil {
		return nil, api.Refuse(api.CodeInvalidRequest, "%s", err.Error())
	}
	switch {
	case r.Job.RunAt != nil, len(r.Job.DependsOn) > 0, r.Job.UniqueKey != "", r.Job.UniqueWindowMs != 0,
		r.Job.Debounce != nil, r.Job.Throttle != nil:
		return nil, api.Refuse(api.CodeInvalidRequest, "a scheduled job takes no run_at, depends_on, unique key, debounce or throttle: each period is its own")
	}
	if _, e := t.validateEnqueueSent(-1, r.Job, append(jf, 0)[0]); e != nil {
		return nil, e // the template below drops a field sent as 0
	}
	template := r.Job.AppendJSON(nil)
	if _, e := t.scheduledJob(name, template, 1); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		if err := t.notModule(name); err != nil {
			return result{}, err
		}
		first := s.Next(time.UnixMilli(now)).UnixMilli()
		if first <= 0 {
			return result{}, errors.New("unreachable: a schedule that never fires")
		}
		sc, err := t.store.PutSchedule(now, fencestore.Schedule{Name: name, Cron: s.String(), Job: template, Paused: r.Paused, NextAt: first})
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: scheduleView(sc).AppendJSON}, nil
	}, nil
}

func (t *Tenant) getSchedule(name string) route {
	return func(int64) (result, error) {
		sc, found, err := t.store.GetSchedule(name)
		if err != nil {
			return result{}, err
		}
		if !found {
			return result{}, noSchedule(name)
		}
		return result{status: statusOK, body: scheduleView(sc).AppendJSON}, nil
	}
}

func (t *Tenant) deleteSchedule(name string) route {
	return func(int64) (result, error) {
		if err := t.notModule(name); err != nil {
			return result{}, err
		}
		found, err := t.store.DeleteSchedule(name)
		if err != nil {
			return result{}, err
		}
		if !found {
			return result{}, noSchedule(name)
		}
		return result{status: statusNoContent}, nil
	}
}

func (t *Tenant) listSchedules() route {
	return func(int64) (result, error) {
		scs, err := t.store.ListSchedules()
		if err != nil {
			return result{}, err
		}
		resp := api.SchedulesResponse{Schedules: make([]api.Schedule, len(scs))}
		for i, sc := range scs {
			resp.Schedules[i] = scheduleView(sc)
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func noSchedule(name string) error {
	return api.Refuse(api.CodeNotFound, "schedule %q does not exist", name)
}

func scheduleView(sc fencestore.Schedule) api.Schedule {
	v := api.Schedule{Name: sc.Name, Cron: sc.Cron, Job: sc.Job, Paused: sc.Paused, NextAt: ts(sc.NextAt),
		LastAt: tsPtr(sc.LastAt), LastError: sc.LastError, CreatedAt: ts(sc.CreatedAt), UpdatedAt: ts(sc.UpdatedAt)}
	if sc.LastJob != 0 {
		v.LastJobID = fmtID(sc.LastJob)
	}
	v.Module = sc.Owner == fencestore.OwnerModule
	return v
}

// notModule refuses a per-tenant change to a schedule the module declares.
func (t *Tenant) notModule(name string) error {
	if _, ok := t.app.schedules[name]; ok {
		return api.Refuse(api.CodeModuleSchedule, "schedule %q is declared by the tenant module (App.Schedule), for every tenant: change it in the module", name)
	}
	return nil
}

// Schedule is a periodic job the module declares for every tenant (as
// River's periodic jobs), besides the schedules a tenant puts itself: each
// period of Cron enqueues Job, once. A tenant gets the module's schedules
// when it migrates (its first request after a deploy): new ones start at
// their next period, changed ones are updated, removed ones deleted.
type Schedule struct {
	Name string
	// Cron is a cron expression: five fields, or @every <duration>,
	// @hourly, @daily, @weekly, @monthly.
	Cron string
	// Job is what each period enqueues (no run_at, depends_on or unique
	// key: each period is its own).
	Job api.EnqueueRequest
}

// Schedule declares a periodic job for every tenant. It panics on an
// invalid declaration (a bad name or cron expression, a job with run_at,
// depends_on or a unique key, a duplicate): a bug found at start. Its kind
// is checked when a tenant applies it.
func (a *App) Schedule(s Schedule) *App {
	if !api.ValidName(s.Name) {
		panic(printf.Sprintf("stile: schedule name %q is invalid: use %s", s.Name, api.NameRule))
	}
	c, err := cron.Parse(s.Cron)
	if err != nil {
		panic(printf.Sprintf("stile: schedule %q: %s", s.Name, err.Error()))
	}
	if s.Job.RunAt != nil || len(s.Job.DependsOn) > 0 || s.Job.UniqueKey != "" || s.Job.UniqueWindowMs != 0 ||
		s.Job.Debounce != nil || s.Job.Throttle != nil {
		panic(printf.Sprintf("stile: schedule %q: a scheduled job takes no run_at, depends_on, unique key, debounce or throttle", s.Name))
	}
	if _, dup := a.schedules[s.Name]; dup {
		panic(printf.Sprintf("stile: schedule %q is declared twice", s.Name))
	}
	if a.schedules == nil {
		a.schedules = map[string]moduleSchedule{}
	}
	a.schedules[s.Name] = moduleSchedule{cron: c.String(), job: s.Job.AppendJSON(nil)}
	return a
}

type moduleSchedule struct {
	cron string
	job  []byte
}

// syncSchedules applies the module's schedules to the tenant: added at
// their next period, updated when their cron or job changed (keeping their
// history), deleted when the module no longer declares them.
func (t *Tenant) syncSchedules(now int64) error {
	stored, err := t.store.ListSchedules()
	if err != nil {
		return err
	}
	have := map[string]fencestore.Schedule{}
	for _, sc := range stored {
		have[sc.Name] = sc
		if _, declared := t.app.schedules[sc.Name]; sc.Owner == fencestore.OwnerModule && !declared {
			if _, err := t.store.DeleteSchedule(sc.Name); err != nil {
				return err
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.app.schedules)) {
		ms := t.app.schedules[name]
		if _, e := t.scheduledJob(name, ms.job, 1); e != nil {
			return printf.Errorf("the module's schedule %q: %s", name, e.Message)
		}
		old, found := have[name]
		if found && old.Owner == fencestore.OwnerModule && old.Cron == ms.cron && string(old.Job) == string(ms.job) {
			continue
		}
		c, err := cron.Parse(ms.cron)
		if err != nil {
			return err
		}
		next := c.Next(time.UnixMilli(now)).UnixMilli()
		if _, err := t.store.PutSchedule(now, fencestore.Schedule{Name: name, Cron: ms.cron, Job: ms.job, NextAt: next,
			Owner: fencestore.OwnerModule}); err != nil {
			return err
		}
	}
	return nil
}
