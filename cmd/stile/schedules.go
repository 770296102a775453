package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// ---- stile schedules ----

// scheduleDeleted is what stile schedules delete --json prints: the API
// answers a deleted schedule with no body.
type scheduleDeleted struct {
	Name    string `json:"name"`
	Deleted bool   `json:"deleted"`
}

func runSchedules(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("schedules", "schedules [set NAME CRON --kind K [--args JSON] [--queue Q] [--paused] | delete NAME | pause NAME | resume NAME] --tenant NAME [flags]", true)
	kind := o.fs.String("kind", "", "set: the kind of job each period enqueues (required)")
	jobArgs := o.fs.String("args", "", "set: the job's args, a JSON value")
	queue := o.fs.String("queue", "", "set: the job's queue (default: default)")
	paused := o.fs.Bool("paused", false, "set: create it paused (stile schedules resume starts it)")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	// The arguments are checked before the token is looked for: a typo
	// says what is wrong with it.
	switch verb {
	case "list":
		if len(pos) > 0 {
			return &exitError{exitUsage, fmt.Errorf("stile schedules %s: use set, delete, pause or resume, or nothing to list", pos[0])}
		}
	case "set":
		if len(pos) != 2 || *kind == "" {
			return &exitError{exitUsage, errors.New(`stile schedules set NAME CRON --kind K: e.g. stile schedules set nightly "0 3 * * *" --kind report.daily`)}
		}
		if *jobArgs != "" && !json.Valid([]byte(*jobArgs)) {
			return &exitError{exitUsage, fmt.Errorf("--args %q is not JSON", *jobArgs)}
		}
	case "delete", "pause", "resume":
		if len(pos) != 1 {
			return &exitError{exitUsage, fmt.Errorf("stile schedules %s NAME", verb)}
		}
	default:
		return &exitError{exitUsage, fmt.Errorf("stile schedules %s: use set, delete, pause or resume, or nothing to list", verb)}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var s api.Schedule
	switch verb {
	case "list":
		return o.listSchedules(ctx, ten)
	case "set":
		job := api.EnqueueRequest{Kind: *kind, Queue: *queue}
		if *jobArgs != "" {
			job.Args = json.RawMessage(*jobArgs)
		}
		s, err = ten.PutSchedule(ctx, pos[0], api.ScheduleRequest{Cron: pos[1], Job: job, Paused: *paused})
	case "delete":
		if err := ten.DeleteSchedule(ctx, pos[0]); err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(scheduleDeleted{Name: pos[0], Deleted: true})
		}
		fmt.Fprintf(o.out, "schedule %s: deleted (the jobs it enqueued stay)\n", pos[0])
		return nil
	case "pause", "resume":
		s, err = pauseSchedule(ctx, ten, pos[0], verb == "pause")
	}
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(s)
	}
	if s.Paused {
		fmt.Fprintf(o.out, "schedule %s: paused\n", s.Name)
	} else {
		fmt.Fprintf(o.out, "schedule %s: active, next at %s\n", s.Name, at(s.NextAt))
	}
	return nil
}

// pauseSchedule pauses (or resumes) a schedule: the API has no route of
// its own for it, so it puts the schedule back as it is, paused or not.
// One of the module's is refused (module_schedule) like any change.
func pauseSchedule(ctx context.Context, ten *client.Tenant, name string, paused bool) (api.Schedule, error) {
	cur, err := ten.Schedule(ctx, name)
	if err != nil {
		return api.Schedule{}, err
	}
	// The schedule's job is the enqueue request it was given: decode it
	// as the API does, so that what goes back is exactly what was there.
	body, err := json.Marshal(struct {
		Cron string          `json:"cron"`
		Job  json.RawMessage `json:"job"`
	}{cur.Cron, cur.Job})
	if err != nil {
		return api.Schedule{}, err
	}
	req, err := api.DecodeSchedule(body)
	if err != nil {
		return api.Schedule{}, fmt.Errorf("schedule %s: its job does not read back as an enqueue request: %w", name, err)
	}
	req.Paused = paused
	return ten.PutSchedule(ctx, name, req)
}

func (o *ops) listSchedules(ctx context.Context, ten *client.Tenant) error {
	ss, err := ten.Schedules(ctx)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(api.SchedulesResponse{Schedules: ss})
	}
	rows := make([][]string, len(ss))
	for i, s := range ss {
		var job api.EnqueueRequest
		_ = json.Unmarshal(s.Job, &job) // a job that does not read shows as "-"
		queue := job.Queue
		if queue == "" && job.Kind != "" {
			queue = "default"
		}
		state, next := "active", at(s.NextAt)
		if s.Paused {
			state, next = "paused", "-"
		}
		source := "tenant"
		if s.Module {
			source = "module"
		}
		rows[i] = []string{s.Name, s.Cron, orDash(job.Kind), orDash(queue), state, source, next, when(s.LastAt), orDash(s.LastJobID), oneLine(s.LastError, 60)}
	}
	o.table("SCHEDULE\tCRON\tKIND\tQUEUE\tSTATE\tSOURCE\tNEXT AT\tLAST AT\tLAST JOB\tLAST ERROR", rows)
	return nil
}
