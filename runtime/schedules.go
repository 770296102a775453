package runtime

import (
	"errors"
	"fmt"
	"time"

	"github.com/stile-run/stile/api"
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
		return t.store.AdvanceSchedule(now, sc.Name, period, next, 0, bad.msg)
	}
	n.RunAt = now
	js, err := t.store.Enqueue(now, []fencestore.NewJob{n})
	var ref *fencestore.Refusal
	if errors.As(err, &ref) {
		return t.store.AdvanceSchedule(now, sc.Name, period, next, 0, ref.Message)
	}
	if err != nil {
		return fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	return t.store.AdvanceSchedule(now, sc.Name, period, next, js[0].ID, "")
}

// scheduledJob builds the job a schedule's period enqueues: the stored
// request, validated against the module as it is now, made unique to the
// period and tagged with the schedule.
func (t *Tenant) scheduledJob(name string, template []byte, period int64) (fencestore.NewJob, *apiError) {
	r, err := api.DecodeEnqueue(template)
	if err != nil {
		return fencestore.NewJob{}, decodeErr(err)
	}
	r.Tags = append(r.Tags, "schedule:"+name)
	n, e := t.validateEnqueue(-1, r)
	if e != nil {
		return n, e
	}
	n.UniqueKey = fmt.Sprintf("schedule:%s:%d", name, period)
	return n, nil
}

func (t *Tenant) putSchedule(name string, body []byte) (route, *apiError) {
	if !api.ValidName(name) {
		return nil, badRequest(api.CodeInvalidRequest, "schedule name %q is invalid: use %s", name, api.NameRule)
	}
	r, jf, err := api.DecodeScheduleFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	s, err := cron.Parse(r.Cron)
	if err != nil {
		return nil, badRequest(api.CodeInvalidRequest, "%s", err.Error())
	}
	switch {
	case r.Job.RunAt != nil, len(r.Job.DependsOn) > 0, r.Job.UniqueKey != "", r.Job.UniqueWindowMs != 0:
		return nil, badRequest(api.CodeInvalidRequest, "a scheduled job takes no run_at, depends_on or unique key: each period is its own")
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
			return noSchedule(name), nil
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
			return noSchedule(name), nil
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

func noSchedule(name string) result {
	return result{status: statusNotFound, body: (&api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("schedule %q does not exist", name)}).AppendJSON}
}

func scheduleView(sc fencestore.Schedule) api.Schedule {
	v := api.Schedule{Name: sc.Name, Cron: sc.Cron, Job: sc.Job, Paused: sc.Paused, NextAt: ts(sc.NextAt),
		LastAt: tsPtr(sc.LastAt), LastError: sc.LastError, CreatedAt: ts(sc.CreatedAt), UpdatedAt: ts(sc.UpdatedAt)}
	if sc.LastJob != 0 {
		v.LastJobID = fmtID(sc.LastJob)
	}
	return v
}
