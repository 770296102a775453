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

// HandleBatch registers h as the batch handler of the kind of args type T
// (api.JobArgs), its jobs gathered as b says (Worker.HandleBatch), each
// decoded as Handle decodes: a job whose args do not decode fails for good
// (Final) and is left out of the call. h returns one error per job it was
// given, in order (nil: completed; a nil slice completes them all).
func HandleBatch[T api.JobArgs](w *Worker, b Batch, h func(ctx context.Context, jobs []*JobOf[T]) []error) {
	var zero T
	w.HandleBatch(zero.Kind(), b, func(ctx context.Context, jobs []*Job) []error {
		results := make([]error, len(jobs))
		typed := make([]*JobOf[T], 0, len(jobs))
		at := make([]int, 0, len(jobs)) // where each typed job's result goes
		for i, job := range jobs {
			args, err := api.DecodeArgs[T](job.Args)
			if err != nil {
				results[i] = Final(fmt.Errorf("job %s: %w", job.JobID, err))
				continue
			}
			one := &JobOf[T]{Job: job, Args: args}
			for k, raw := range job.AllArgs {
				a, err := api.DecodeArgs[T](raw)
				if err != nil {
					results[i] = Final(fmt.Errorf("job %s: collected args #%d: %w", job.JobID, k, err))
					break
				}
				one.All = append(one.All, a)
			}
			if results[i] != nil {
				continue
			}
			typed = append(typed, one)
			at = append(at, i)
		}
		if len(typed) == 0 {
			return results
		}
		got := h(ctx, typed)
		for k, i := range at {
			switch {
			case got == nil:
			case len(got) != len(typed):
				results[i] = fmt.Errorf("batch handler returned %d results for %d jobs", len(got), len(typed))
			default:
				results[i] = got[k]
			}
		}
		return results
	})
}
