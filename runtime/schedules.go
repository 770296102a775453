package runtime

import (
	"errors"
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
	case r.Job.RunAt != nil, len(r.Job.DependsOn) > 0, r.Job.UniqueKey != "", r.Job.UniqueWindowMs != 0:
		return nil, api.Refuse(api.CodeInvalidRequest, "a scheduled job takes no run_at, depends_on or unique key: each period is its own")
	}
	if _, e := t.validateEnqueueSent(-1, r.Job, append(jf, 0)[0]); e != nil {
		return nil, e // the template below drops a field sent as 0
	}
	template := r.Job.AppendJSON(nil)
	if _, e := t.scheduledJob(name, template, 1); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
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
	return v
}
