package worker

import (
	"context"
	"fmt"

	"github.com/stile-run/stile/api"
)

// JobOf is a job whose args are decoded into a T: what a handler
// registered with Handle is given.
type JobOf[T api.JobArgs] struct {
	*Job
	// Args are the job's args, decoded (Job.Args keeps their JSON).
	Args T
	// All, for a job debounced with keep "all", are the args of every
	// enqueue it collected, decoded, in order (Args is the last).
	All []T
}

// Handle registers h as the handler of the kind of args type T
// (api.JobArgs): the worker decodes each job's args into a T before h
// runs, as encoding/json does (fields T lacks are ignored, absent args are
// T's zero value). Args that do not decode fail the job for good
// (Final): no attempt could take them; the error names the kind, the job
// and what did not fit. A module that registers the kind with
// runtime.RegisterJobArgs refuses such args at enqueue already.
//
//	worker.Handle(w, func(ctx context.Context, job *worker.JobOf[Receipt]) (any, error) {
//		return nil, send(ctx, job.Args.Order)
//	})
func Handle[T api.JobArgs](w *Worker, h func(ctx context.Context, job *JobOf[T]) (output any, err error)) {
	var zero T
	w.Handle(zero.Kind(), func(ctx context.Context, job *Job) (any, error) {
		args, err := api.DecodeArgs[T](job.Args)
		if err != nil {
			return nil, Final(fmt.Errorf("job %s: %w", job.JobID, err))
		}
		typed := &JobOf[T]{Job: job, Args: args}
		for i, raw := range job.AllArgs {
			a, err := api.DecodeArgs[T](raw)
			if err != nil {
				return nil, Final(fmt.Errorf("job %s: collected args #%d: %w", job.JobID, i, err))
			}
			typed.All = append(typed.All, a)
		}
		return h(ctx, typed)
	})
}
