package runtime

import (
	"bytes"
	"errors"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// ---- claim ----

func (t *Tenant) claim(c *call, body []byte) (route, *api.Error) {
	r, f, err := api.DecodeClaimFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Worker == "" {
		return nil, api.Refuse(api.CodeInvalidRequest, "missing field \"worker\": name the claiming worker")
	}
	if !api.ValidName(r.Worker) {
		return nil, api.Refuse(api.CodeInvalidRequest, "worker %q is invalid: use %s", r.Worker, api.NameRule)
	}
	if len(r.Queues) == 0 {
		r.Queues = []string{api.DefaultQueue}
	}
	if len(r.Queues) > api.MaxClaimQueues {
		return nil, api.Refuse(api.CodeInvalidRequest, "%d queues exceed the limit of %d per claim", len(r.Queues), api.MaxClaimQueues)
	}
	for _, q := range r.Queues {
		if q == api.AnyQueue && len(r.Queues) > 1 {
			return nil, api.Refuse(api.CodeInvalidRequest, "queue %q (every queue) cannot be named with others: pass [%q] alone, or name up to %d queues", api.AnyQueue, api.AnyQueue, api.MaxClaimQueues)
		}
		if q != api.AnyQueue && !api.ValidName(q) {
			return nil, api.Refuse(api.CodeInvalidRequest, "queue %q is invalid: use %s, or %q alone for every queue", q, api.NameRule, api.AnyQueue)
		}
	}
	if e := validPush(r.Push); e != nil {
		return nil, e
	}
	if len(r.Kinds) > api.MaxClaimKinds {
		return nil, api.Refuse(api.CodeInvalidRequest, "%d kinds exceed the limit of %d per claim", len(r.Kinds), api.MaxClaimKinds)
	}
	for _, k := range r.Kinds {
		if _, ok := t.app.Kind(k); !ok {
			return nil, api.Refuse(api.CodeUnknownKind, "unknown job kind %q: this module registers %s", k, kindList(t.app.Kinds()))
		}
	}
	if r.Limit == 0 && !f.Has(api.ClaimRequestLimit) {
		r.Limit = 1
	}
	if r.Limit < 1 || r.Limit > api.MaxClaim {
		return nil, api.Refuse(api.CodeInvalidRequest, "limit %d is outside 1-%d", r.Limit, api.MaxClaim)
	}
	if r.WaitMs < 0 || r.WaitMs > api.MaxWait.Milliseconds() {
		return nil, api.Refuse(api.CodeInvalidRequest, "wait_ms %d is outside 0-%d", r.WaitMs, api.MaxWait.Milliseconds())
	}
	return func(now int64) (result, error) {
		req := fencestore.ClaimRequest{Worker: r.Worker, Queues: r.Queues, Kinds: r.Kinds, Limit: r.Limit,
			MaxBytes: api.MaxAnswerBytes}
		claimed, cut, err := t.store.Claim(now, req)
		if err != nil {
			return result{}, err
		}
		t.executors.claims.note(now, r.Kinds)
		hold := len(claimed) == 0 && r.WaitMs > 0 && t.mayHold(c)
		if r.Push != "" {
			// Whether the push still claims decides whether work that
			// becomes ready needs a push of its own (pushes.go).
			more := cut
			if len(claimed) == r.Limit {
				if more, err = t.store.MoreReady(now, req); err != nil {
					return result{}, err
				}
			}
			if hold && t.executors.pushes != nil {
				t.executors.pushes.Lingers(r.Push, r.Linger, now, r.WaitMs) // the host holds the claim
			} else {
				t.claimedFor(r.Push, true, more)
			}
		}
		resp := api.ClaimResponse{Now: ts(now), Jobs: make([]api.ClaimedJob, len(claimed)), More: cut}
		for i, c := range claimed {
			resp.Jobs[i] = api.ClaimedJob{ID: fmtID(c.ID), Kind: c.Kind, Queue: c.Queue, Args: c.Args,
				Attempt: c.Attempt, MaxAttempts: c.MaxAttempts, Failures: c.Failures, LeaseMs: c.LeaseMs,
				TimeoutMs: c.TimeoutMs, LeaseUntil: ts(c.LeaseUntil), LeaseToken: c.LeaseToken,
				CreatedAt: ts(c.CreatedAt), Tags: tagList(c.Tags), Traceparent: c.Traceparent}
			if len(c.AllArgs) > 0 {
				// Written by the store as an array of valid args; import
				// checks it too.
				if err := jsonwire.DecodeBody(c.AllArgs, func(r *jsonwire.Reader) error {
					return jsonwire.RawArray(r, "all_args", &resp.Jobs[i].AllArgs)
				}); err != nil {
					return result{}, printf.Errorf("job %d: its collected args: %w", c.ID, err)
				}
			}
		}
		var res result
		if len(claimed) == 0 {
			res.idle = true
			if hold {
				res.holdMs, res.hold = r.WaitMs, do.Hold{Queues: r.Queues, Kinds: r.Kinds}
			} else if r.WaitMs > 0 {
				resp.RetryAfterMs = api.HeldRetryAfter.Milliseconds()
			}
		}
		res.status, res.body = statusOK, resp.AppendJSON // a copy of resp, as it is now
		return res, nil
	}, nil
}

// mayHold says whether an empty claim that asked to wait may be held: not
// when its host already holds as many claims as the tenant, or the
// claim's token, may have held (App.HeldClaims). Each held claim costs its
// host a connection and a look on every wake that matches it.
func (t *Tenant) mayHold(c *call) bool {
	perTenant, perToken := t.app.heldClaims()
	return c.heldTenant < perTenant && c.heldToken < perToken
}

// ---- heartbeat, report ----

func validateClaim(c api.Claim) *api.Error {
	switch {
	case c.Worker == "":
		return api.Refuse(api.CodeInvalidRequest, "missing field \"worker\"")
	case c.Attempt < 1:
		return api.Refuse(api.CodeInvalidRequest, "missing or invalid field \"attempt\": the attempt number from the claim (1 or more)")
	case c.LeaseToken == "":
		return api.Refuse(api.CodeInvalidRequest, "missing field \"lease_token\": the token from the claim")
	case len(c.Worker) > api.MaxNameBytes || len(c.LeaseToken) > 256:
		return api.Refuse(api.CodeInvalidRequest, "worker or lease_token is too long")
	}
	return nil
}

func fenceClaim(c api.Claim) fence.Claim {
	return fence.Claim{Worker: c.Worker, Attempt: c.Attempt, Token: c.LeaseToken}
}

func (t *Tenant) heartbeat(idText string, body []byte) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	r, err := api.DecodeHeartbeat(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := validateClaim(r.Claim); e != nil {
		return nil, e
	}
	var progress []byte
	if len(r.Progress) > api.MaxProgressBytes {
		return nil, api.Refuse(api.CodeTooLarge, "progress of %d bytes exceeds the limit of %d", len(r.Progress), api.MaxProgressBytes)
	}
	if len(r.Progress) > 0 && !bytes.Equal(bytes.TrimSpace(r.Progress), []byte("null")) {
		progress = r.Progress
	}
	return func(now int64) (result, error) {
		until, cancel, err := t.store.Heartbeat(now, id, fenceClaim(r.Claim), progress)
		if err != nil {
			return result{}, err // a fence's refusal commits its audit row (inTx)
		}
		return result{status: statusOK, body: api.HeartbeatResponse{Now: ts(now), LeaseUntil: ts(until), CancelRequested: cancel}.AppendJSON}, nil
	}, nil
}

func validateReport(r *api.ReportRequest) (fencestore.Report, *api.Error) {
	if e := validateClaim(r.Claim); e != nil {
		return fencestore.Report{}, e
	}
	rep := fencestore.Report{Claim: fenceClaim(r.Claim)}
	if r.Output != nil && r.Outcome != api.OutcomeCompleted {
		return rep, api.Refuse(api.CodeInvalidRequest, "only a completed report carries \"output\"")
	}
	if r.Final && r.Outcome != api.OutcomeFailed {
		return rep, api.Refuse(api.CodeInvalidRequest, "only a failed report may be \"final\"")
	}
	if r.SnoozeMs != 0 && r.Outcome != api.OutcomeSnoozed {
		return rep, api.Refuse(api.CodeInvalidRequest, "only a snoozed report carries \"snooze_ms\"")
	}
	if r.Error != "" && r.Outcome != api.OutcomeFailed && r.Outcome != api.OutcomeCancelled {
		return rep, api.Refuse(api.CodeInvalidRequest, "only a failed or cancelled report carries \"error\"")
	}
	switch r.Outcome {
	case api.OutcomeCompleted:
		rep.Outcome = fence.OutcomeCompleted
		if len(r.Output) > api.MaxOutputBytes {
			return rep, api.Refuse(api.CodeTooLarge, "output of %d bytes exceeds the limit of %d", len(r.Output), api.MaxOutputBytes)
		}
		if len(r.Output) > 0 && !bytes.Equal(bytes.TrimSpace(r.Output), []byte("null")) {
			rep.Output = r.Output
		}
	case api.OutcomeFailed, api.OutcomeCancelled:
		rep.Outcome = fence.Outcome(r.Outcome)
		rep.Final = r.Final
		rep.Error = r.Error
		if rep.Error == "" && r.Outcome == api.OutcomeFailed {
			rep.Error = "failed without a message"
		}
		if len(rep.Error) > api.MaxErrorBytes {
			rep.Error = rep.Error[:api.MaxErrorBytes] + "… (truncated)"
		}
	case api.OutcomeSnoozed:
		rep.Outcome = fence.OutcomeSnoozed
		if r.SnoozeMs < 0 || r.SnoozeMs > api.MaxSnooze.Milliseconds() {
			return rep, api.Refuse(api.CodeInvalidRequest, "snooze_ms %d is outside 0-%d", r.SnoozeMs, api.MaxSnooze.Milliseconds())
		}
		rep.SnoozeMs = r.SnoozeMs
	case "":
		return rep, api.Refuse(api.CodeInvalidRequest, "missing field \"outcome\": completed, failed, cancelled or snoozed")
	default:
		return rep, api.Refuse(api.CodeInvalidRequest, "outcome %q is unknown: use completed, failed, cancelled or snoozed", r.Outcome)
	}
	if _, e := validTags("", r.Tags); e != nil {
		return rep, e
	}
	rep.Tags = r.Tags
	return rep, nil
}

func (t *Tenant) reportOne(idText string, body []byte) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	r, err := api.DecodeReport(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	rep, e := validateReport(&r)
	if e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		res, err := t.store.Report(now, id, rep, mrandFloat())
		if err != nil {
			return result{}, err // a fence's refusal commits its audit row (inTx)
		}
		j := res.Job
		return result{status: statusOK, body: api.ReportResponse{JobID: idText, State: string(j.State), Attempt: j.Attempt,
			Failures: j.Failures, RunAt: ts(j.RunAt), Duplicate: res.Duplicate, Kind: j.Kind, AttemptMs: attemptMs(now, res)}.AppendJSON,
			finished: j.State.Terminal()}, nil
	}, nil
}

// attemptMs is how long a reported attempt ran, from its claim to now
// (0 for a duplicate, whose attempt had ended).
func attemptMs(now int64, res fencestore.ReportResult) int64 {
	if res.Duplicate || res.ClaimedAt == 0 {
		return 0
	}
	return max(now-res.ClaimedAt, 1)
}

func (t *Tenant) reportBatch(body []byte) (route, *api.Error) {
	r, err := api.DecodeReportBatch(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Reports), api.MaxBatchReports, "reports"); e != nil {
		return nil, e
	}
	ids := make([]int64, len(r.Reports))
	reps := make([]fencestore.Report, len(r.Reports))
	for i := range r.Reports {
		id, e := parseJobID(r.Reports[i].JobID)
		if e != nil {
			return nil, api.Refuse(api.CodeInvalidRequest, "reports[%d]: job_id %q is not a job id", i, r.Reports[i].JobID)
		}
		rep, e := validateReport(&r.Reports[i].ReportRequest)
		if e != nil {
			return nil, e.At(printf.Sprintf("reports[%d]", i))
		}
		ids[i], reps[i] = id, rep
	}
	return func(now int64) (result, error) {
		resp := api.BatchReportResponse{Results: make([]api.BatchReportResult, len(reps))}
		ended := false
		for i, rep := range reps {
			out := api.BatchReportResult{JobID: r.Reports[i].JobID}
			res, err := t.store.Report(now, ids[i], rep, mrandFloat())
			var refused *api.Error
			switch {
			case errors.As(err, &refused):
				out.Error = refused
			case err != nil:
				return result{}, err
			default:
				out.State, out.Duplicate, out.Kind, out.AttemptMs = string(res.Job.State), res.Duplicate, res.Job.Kind, attemptMs(now, res)
				ended = ended || res.Job.State.Terminal()
			}
			resp.Results[i] = out
		}
		return result{status: statusOK, body: resp.AppendJSON, finished: ended}, nil
	}, nil
}
