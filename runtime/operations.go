package runtime

import (
	"errors"
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// Bulk operations: an action on every job a filter finds, run by the
// tenant's alarm (and by each read of the operation's progress) in slices
// of operationSlice jobs, each slice one
// transaction that records how far it got, so a slice that fails (or a
// lost alarm) runs again from where the last one that committed ended.

// operationSlice bounds the jobs one slice acts on.
const operationSlice = 100

func operationView(o fencestore.Operation) api.Operation {
	v := api.Operation{ID: fmtID(o.ID), Action: o.Action, Filter: o.Filter, Reaction: o.Reaction, FromSeq: o.FromSeq,
		UntilSeq: o.UntilSeq, State: o.State, Matched: o.Matched, Done: o.Done, Skipped: o.Skipped, LastSkip: o.LastSkip,
		CreatedAt: ts(o.CreatedAt)}
	if o.DoneAt != 0 {
		v.DoneAt = tsPtr(o.DoneAt)
	}
	return v
}

func (t *Tenant) startOperation(body []byte) (route, *api.Error) {
	r, err := api.DecodeOperation(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	switch r.Action {
	case "retry", "cancel", "delete":
		if r.Reaction != "" || r.FromSeq != 0 {
			return nil, api.Refuse(api.CodeInvalidRequest, "reaction and from_seq go with action \"replay\", not %q", r.Action)
		}
	case "replay":
		return t.startReplay(r)
	default:
		return nil, api.Refuse(api.CodeInvalidRequest, "action %q is not retry, cancel, delete or replay", r.Action)
	}
	q, e := query(r.Filter)
	if e != nil {
		return nil, e
	}
	if _, e := jobFilter(q, false); e != nil {
		return nil, api.Refuse(api.CodeInvalidRequest, "filter: %s", e.Message)
	}
	return func(now int64) (result, error) {
		o, err := t.store.StartOperation(now, r.Action, r.Filter)
		if err != nil {
			return result{}, err
		}
		return result{status: statusAccepted, body: operationView(o).AppendJSON}, nil
	}, nil
}

func (t *Tenant) getOperation(idText string) (route, *api.Error) {
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 1 {
		return nil, api.Refuse(api.CodeNotFound, "operation %q does not exist", idText)
	}
	return func(now int64) (result, error) {
		os, err := t.store.Operations(id, 1)
		if err != nil {
			return result{}, err
		}
		if len(os) == 0 {
			return result{}, api.Refuse(api.CodeNotFound, "operation %q does not exist", idText)
		}
		if os[0].State == fencestore.OperationRunning && os[0].UpdatedAt <= now {
			// Who follows the operation moves it on too (the alarm does
			// without anyone asking): a slice that fails fails this read.
			if err := t.operationSlice(now, os[0]); err != nil {
				return result{}, err
			}
			if os, err = t.store.Operations(id, 1); err != nil {
				return result{}, err
			}
		}
		return result{status: statusOK, body: operationView(os[0]).AppendJSON}, nil
	}, nil
}

func (t *Tenant) listOperations() route {
	return func(int64) (result, error) {
		os, err := t.store.Operations(0, 100)
		if err != nil {
			return result{}, err
		}
		resp := api.OperationsResponse{Operations: make([]api.Operation, len(os))}
		for i, o := range os {
			resp.Operations[i] = operationView(o)
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

// runOperations runs one slice of each running operation (due work).
func (t *Tenant) runOperations(now int64) error {
	ops, err := t.store.RunningOperations(4)
	if err != nil {
		return err
	}
	for _, o := range ops {
		if o.UpdatedAt > now {
			continue // deferred: a replay waiting for a delivery in flight
		}
		if err := t.operationSlice(now, o); err != nil {
			return err
		}
	}
	return nil
}

// operationSlice acts on the next jobs o's filter finds. A job the action
// refuses (finished meanwhile, not retryable) is skipped and counted.
func (t *Tenant) operationSlice(now int64, o fencestore.Operation) error {
	if o.Action == "replay" {
		return t.replaySlice(now, o)
	}
	q, e := query(o.Filter)
	var f fencestore.ListFilter
	if e == nil {
		f, e = jobFilter(q, false)
	}
	if e != nil { // checked when started: only a changed module gets here
		return t.store.AdvanceOperation(now, o, o.AfterID, 0, 0, 0, "filter: "+e.Message, true)
	}
	f.After, f.Limit = o.AfterID, operationSlice
	js, cut, scanned, err := t.store.Search(f)
	if err != nil {
		return err
	}
	var done, skipped int64
	var lastSkip string
	for _, j := range js {
		var err error
		switch o.Action {
		case "retry":
			if refused := t.registered(j.Kind); refused != nil {
				err = refused
			} else {
				_, err = t.store.Retry(now, j.ID)
			}
		case "cancel":
			_, err = t.store.Cancel(now, j.ID, printf.Sprintf("cancelled by bulk operation %d", o.ID))
		case "delete":
			err = t.store.Delete(j.ID)
		}
		var refused *api.Error
		switch {
		case errors.As(err, &refused):
			skipped++
			lastSkip = printf.Sprintf("job %d: %s", j.ID, refused.Message)
		case err != nil:
			return printf.Errorf("operation %d on job %d: %w", o.ID, j.ID, err)
		default:
			done++
		}
	}
	after, finished := o.AfterID, false
	switch {
	case len(js) > 0 && (len(js) == f.Limit || cut):
		after = js[len(js)-1].ID
	case scanned != 0:
		after = scanned
	default:
		finished = true
		if len(js) > 0 {
			after = js[len(js)-1].ID
		}
	}
	return t.store.AdvanceOperation(now, o, after, int64(len(js)), done, skipped, lastSkip, finished)
}
