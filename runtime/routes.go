package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/jobs"
)

// apiError is a refusal decided before any storage is touched.
type apiError struct {
	status int
	code   string
	msg    string
}

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: statusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// match routes an API request and validates its input. Everything that can
// be refused without reading storage is refused here, so bad input writes
// nothing, not even due work.
func (t *Tenant) match(req do.Request) (route, *apiError) {
	tenant, rest, ok := api.SplitTenantPath(req.Path)
	if !ok {
		return nil, &apiError{statusNotFound, api.CodeNotFound, api.NoRoute(req.Method, req.Path)}
	}
	if !api.ValidTenant(tenant) {
		return nil, &apiError{statusBadRequest, api.InvalidTenant.Code, api.InvalidTenant.Message}
	}
	if t.name == "" {
		t.name = tenant
	}
	if tenant != t.name {
		// One module instance serves one tenant; a host that routes another
		// tenant's request here is broken, and must not write.
		return nil, &apiError{statusBadRequest, api.CodeInvalidTenant, fmt.Sprintf("this object serves tenant %q, not %q", t.name, tenant)}
	}
	if len(req.Body) > api.MaxBodyBytes {
		return nil, &apiError{statusTooLarge, api.BodyTooLarge.Code, api.BodyTooLarge.Message}
	}
	parts := strings.Split(rest, "/")
	method := func(want string, r func() (route, *apiError)) (route, *apiError) {
		if req.Method != want {
			return nil, &apiError{statusMethodNotAllowed, api.CodeMethodNotAllowed, fmt.Sprintf("%s %s: use %s", req.Method, req.Path, want)}
		}
		return r()
	}
	switch {
	case rest == "jobs":
		return method("POST", func() (route, *apiError) { return t.enqueueOne(req.Body) })
	case rest == "jobs/batch":
		return method("POST", func() (route, *apiError) { return t.enqueueBatch(req.Body) })
	case len(parts) == 2 && parts[0] == "jobs":
		return method("GET", func() (route, *apiError) { return t.getJob(parts[1]) })
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "heartbeat":
		return method("POST", func() (route, *apiError) { return t.heartbeat(parts[1], req.Body) })
	case len(parts) == 3 && parts[0] == "jobs" && parts[2] == "report":
		return method("POST", func() (route, *apiError) { return t.reportOne(parts[1], req.Body) })
	case rest == "claims":
		return method("POST", func() (route, *apiError) { return t.claim(req.Body) })
	case rest == "reports":
		return method("POST", func() (route, *apiError) { return t.reportBatch(req.Body) })
	case rest == "status":
		return method("GET", func() (route, *apiError) { return t.status(), nil })
	}
	return nil, &apiError{statusNotFound, api.CodeNotFound, fmt.Sprintf("no route %s %s", req.Method, req.Path)}
}

// batchSize refuses an empty batch or one over its limit.
func batchSize(n, max int, field string) *apiError {
	if n == 0 {
		return badRequest(api.CodeInvalidRequest, "missing field %q: send at least one", field)
	}
	if n > max {
		return badRequest(api.CodeInvalidRequest, "%d %s in one batch exceed the limit of %d: split the batch", n, field, max)
	}
	return nil
}

// decodeErr turns a body the API's decoders refused into a 400.
func decodeErr(err error) *apiError {
	return badRequest(api.CodeInvalidJSON, "%s", err.Error())
}

func parseJobID(s string) (int64, *apiError) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || id > 1<<53-1 {
		return 0, &apiError{statusNotFound, api.CodeNotFound, fmt.Sprintf("job %q does not exist", s)}
	}
	return id, nil
}

func fmtID(id int64) string { return strconv.FormatInt(id, 10) }

func ts(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func tsPtr(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := ts(ms)
	return &t
}

// ---- enqueue ----

func (t *Tenant) validateEnqueue(i int, r api.EnqueueRequest) (jobs.NewJob, *apiError) {
	where := ""
	if i >= 0 {
		where = fmt.Sprintf("jobs[%d]: ", i)
	}
	if r.Kind == "" {
		return jobs.NewJob{}, badRequest(api.CodeInvalidRequest, "%smissing field \"kind\"", where)
	}
	k, ok := t.app.Kind(r.Kind)
	if !ok {
		return jobs.NewJob{}, badRequest(api.CodeUnknownKind, "%sunknown job kind %q: this module registers %s", where, r.Kind, kindList(t.app.Kinds()))
	}
	args := []byte(r.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if len(args) > api.MaxArgsBytes {
		return jobs.NewJob{}, badRequest(api.CodeTooLarge, "%sargs of %d bytes exceed the limit of %d (1 MiB): store large data elsewhere and pass a reference", where, len(args), api.MaxArgsBytes)
	}
	if k.Validate != nil {
		if err := k.Validate(args); err != nil {
			return jobs.NewJob{}, badRequest(api.CodeInvalidArgs, "%sargs of %s: %s", where, r.Kind, oneLine(err.Error()))
		}
	}
	n := jobs.NewJob{Kind: k.Name, Queue: k.Queue, Priority: k.Priority, Args: args,
		MaxAttempts: int64(k.MaxAttempts), LeaseMs: k.Lease.Milliseconds(),
		BackoffMs: k.Backoff.Milliseconds(), BackoffMaxMs: k.MaxBackoff.Milliseconds()}
	if r.Queue != "" {
		if !api.ValidName(r.Queue) {
			return n, badRequest(api.CodeInvalidRequest, "%squeue %q is invalid: use %s", where, r.Queue, api.NameRule)
		}
		n.Queue = r.Queue
	}
	if r.Priority != nil {
		if *r.Priority < 0 || *r.Priority > api.MaxPriority {
			return n, badRequest(api.CodeInvalidRequest, "%spriority %d is outside 0-%d (0 runs first)", where, *r.Priority, api.MaxPriority)
		}
		n.Priority = *r.Priority
	}
	if r.MaxAttempts != 0 {
		if r.MaxAttempts < 1 || r.MaxAttempts > api.MaxMaxAttempts {
			return n, badRequest(api.CodeInvalidRequest, "%smax_attempts %d is outside 1-%d", where, r.MaxAttempts, api.MaxMaxAttempts)
		}
		n.MaxAttempts = int64(r.MaxAttempts)
	}
	if r.LeaseMs != 0 {
		if r.LeaseMs < api.MinLease.Milliseconds() || r.LeaseMs > api.MaxLease.Milliseconds() {
			return n, badRequest(api.CodeInvalidRequest, "%slease_ms %d is outside %d-%d", where, r.LeaseMs, api.MinLease.Milliseconds(), api.MaxLease.Milliseconds())
		}
		n.LeaseMs = r.LeaseMs
	}
	if r.RunAt != nil {
		ms := r.RunAt.UnixMilli()
		if ms < 0 || ms > 1<<53-1 {
			return n, badRequest(api.CodeInvalidRequest, "%srun_at %s is out of range", where, r.RunAt.Format(time.RFC3339))
		}
		n.RunAt = ms
	}
	return n, nil
}

func kindList(names []string) string {
	if len(names) == 0 {
		return "no job kinds"
	}
	const show = 10
	if len(names) > show {
		return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more", len(names)-show)
	}
	return strings.Join(names, ", ")
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func (t *Tenant) enqueueOne(body []byte) (route, *apiError) {
	r, err := api.DecodeEnqueue(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	n, e := t.validateEnqueue(-1, r)
	if e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		if n.RunAt == 0 {
			n.RunAt = now
		}
		js, err := t.store.Enqueue(now, []jobs.NewJob{n})
		if err != nil {
			return result{}, err
		}
		v := jobView(js[0])
		v.Args = nil // the caller sent them; echoing up to 1 MiB back helps nobody
		return result{status: statusCreated, body: v, wake: js[0].State == fence.StateAvailable}, nil
	}, nil
}

func (t *Tenant) enqueueBatch(body []byte) (route, *apiError) {
	r, err := api.DecodeEnqueueBatch(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Jobs), api.MaxBatchJobs, "jobs"); e != nil {
		return nil, e
	}
	ns := make([]jobs.NewJob, len(r.Jobs))
	for i, j := range r.Jobs {
		var e *apiError
		if ns[i], e = t.validateEnqueue(i, j); e != nil {
			return nil, e
		}
	}
	return func(now int64) (result, error) {
		for i := range ns {
			if ns[i].RunAt == 0 {
				ns[i].RunAt = now
			}
		}
		js, err := t.store.Enqueue(now, ns)
		if err != nil {
			return result{}, err
		}
		resp := api.EnqueueBatchResponse{Jobs: make([]api.Job, len(js))}
		wake := false
		for i, j := range js {
			resp.Jobs[i] = jobView(j)
			resp.Jobs[i].Args = nil
			wake = wake || j.State == fence.StateAvailable
		}
		return result{status: statusCreated, body: resp, wake: wake}, nil
	}, nil
}

func jobView(j jobs.Job) api.Job {
	v := api.Job{ID: fmtID(j.ID), Kind: j.Kind, Queue: j.Queue, Priority: j.Priority, Args: j.Args,
		State: string(j.State), Attempt: j.Attempt, Failures: j.Failures, MaxAttempts: j.MaxAttempts,
		LeaseMs: j.LeaseMs, RunAt: ts(j.RunAt), CreatedAt: ts(j.CreatedAt), FinishedAt: tsPtr(j.FinishedAt),
		Output: j.Output, LastError: j.LastError}
	if j.State == fence.StateRunning {
		v.Running = &api.Attempt{Attempt: j.Attempt, Worker: j.Worker, ClaimedAt: ts(j.ClaimedAt), LeaseUntil: ts(j.LeaseUntil)}
	}
	return v
}

// ---- get, status ----

func (t *Tenant) getJob(idText string) (route, *apiError) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	return func(int64) (result, error) {
		j, err := t.store.Get(id)
		if errors.Is(err, jobs.ErrNotFound) {
			return notFound(idText), nil
		}
		if err != nil {
			return result{}, err
		}
		v := jobView(j)
		atts, err := t.store.Attempts(id)
		if err != nil {
			return result{}, err
		}
		for _, a := range atts {
			v.Attempts = append(v.Attempts, api.Attempt{Attempt: a.Attempt, Worker: a.Worker, ClaimedAt: ts(a.ClaimedAt),
				LeaseUntil: ts(a.LeaseUntil), EndedAt: tsPtr(a.EndedAt), Outcome: a.Outcome, Error: a.Error, NoticedBy: a.NoticedBy})
		}
		rejs, err := t.store.Rejections(id)
		if err != nil {
			return result{}, err
		}
		for _, r := range rejs {
			v.Rejections = append(v.Rejections, api.Rejection{At: ts(r.At), Request: r.Request, Worker: r.Worker,
				Attempt: r.Attempt, Outcome: r.Outcome, Code: r.Code, Message: r.Message})
		}
		return result{status: statusOK, body: v}, nil
	}, nil
}

func notFound(id string) result {
	return result{status: statusNotFound, body: &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("job %q does not exist", id)}}
}

func (t *Tenant) status() route {
	return func(now int64) (result, error) {
		at, err := t.store.NextDue() // read, not the cache: status shows the truth
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.Status{Tenant: t.name, Now: ts(now),
			SchemaVersion: t.schemaVersion, AlarmAt: tsPtr(at)}}, nil
	}
}

// ---- claim ----

func (t *Tenant) claim(body []byte) (route, *apiError) {
	r, err := api.DecodeClaim(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Worker == "" {
		return nil, badRequest(api.CodeInvalidRequest, "missing field \"worker\": name the claiming worker")
	}
	if !api.ValidName(r.Worker) {
		return nil, badRequest(api.CodeInvalidRequest, "worker %q is invalid: use %s", r.Worker, api.NameRule)
	}
	if len(r.Queues) == 0 {
		r.Queues = []string{api.DefaultQueue}
	}
	if len(r.Queues) > api.MaxClaimQueues {
		return nil, badRequest(api.CodeInvalidRequest, "%d queues exceed the limit of %d per claim", len(r.Queues), api.MaxClaimQueues)
	}
	for _, q := range r.Queues {
		if !api.ValidName(q) {
			return nil, badRequest(api.CodeInvalidRequest, "queue %q is invalid: use %s", q, api.NameRule)
		}
	}
	if len(r.Kinds) > api.MaxClaimKinds {
		return nil, badRequest(api.CodeInvalidRequest, "%d kinds exceed the limit of %d per claim", len(r.Kinds), api.MaxClaimKinds)
	}
	for _, k := range r.Kinds {
		if _, ok := t.app.Kind(k); !ok {
			return nil, badRequest(api.CodeUnknownKind, "unknown job kind %q: this module registers %s", k, kindList(t.app.Kinds()))
		}
	}
	if r.Limit == 0 {
		r.Limit = 1
	}
	if r.Limit < 1 || r.Limit > api.MaxClaim {
		return nil, badRequest(api.CodeInvalidRequest, "limit %d is outside 1-%d", r.Limit, api.MaxClaim)
	}
	if r.WaitMs < 0 || r.WaitMs > api.MaxWait.Milliseconds() {
		return nil, badRequest(api.CodeInvalidRequest, "wait_ms %d is outside 0-%d", r.WaitMs, api.MaxWait.Milliseconds())
	}
	return func(now int64) (result, error) {
		claimed, err := t.store.Claim(now, jobs.ClaimRequest{Worker: r.Worker, Queues: r.Queues, Kinds: r.Kinds,
			Limit: r.Limit})
		if err != nil {
			return result{}, err
		}
		resp := api.ClaimResponse{Now: ts(now), Jobs: make([]api.ClaimedJob, len(claimed))}
		for i, c := range claimed {
			resp.Jobs[i] = api.ClaimedJob{ID: fmtID(c.ID), Kind: c.Kind, Queue: c.Queue, Args: c.Args,
				Attempt: c.Attempt, MaxAttempts: c.MaxAttempts, Failures: c.Failures, LeaseMs: c.LeaseMs,
				LeaseUntil: ts(c.LeaseUntil), LeaseToken: c.LeaseToken, CreatedAt: ts(c.CreatedAt)}
		}
		res := result{status: statusOK, body: resp}
		if len(claimed) == 0 {
			res.holdMs = r.WaitMs
		}
		return res, nil
	}, nil
}

// ---- heartbeat, report ----

func validateClaim(c api.Claim) *apiError {
	switch {
	case c.Worker == "":
		return badRequest(api.CodeInvalidRequest, "missing field \"worker\"")
	case c.Attempt < 1:
		return badRequest(api.CodeInvalidRequest, "missing or invalid field \"attempt\": the attempt number from the claim (1 or more)")
	case c.LeaseToken == "":
		return badRequest(api.CodeInvalidRequest, "missing field \"lease_token\": the token from the claim")
	case len(c.Worker) > api.MaxNameBytes || len(c.LeaseToken) > 256:
		return badRequest(api.CodeInvalidRequest, "worker or lease_token is too long")
	}
	return nil
}

func fenceClaim(c api.Claim) fence.Claim {
	return fence.Claim{Worker: c.Worker, Attempt: c.Attempt, Token: c.LeaseToken}
}

func rejected(rej *fence.Rejection) result {
	return result{status: statusConflict, body: &api.Error{Code: string(rej.Code), Message: rej.Message}}
}

func (t *Tenant) heartbeat(idText string, body []byte) (route, *apiError) {
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
	return func(now int64) (result, error) {
		until, err := t.store.Heartbeat(now, id, fenceClaim(r.Claim))
		var rej *fence.Rejection
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return notFound(idText), nil
		case errors.As(err, &rej):
			return rejected(rej), nil
		case err != nil:
			return result{}, err
		}
		return result{status: statusOK, body: api.HeartbeatResponse{Now: ts(now), LeaseUntil: ts(until)}}, nil
	}, nil
}

func validateReport(r *api.ReportRequest) (jobs.Report, *apiError) {
	if e := validateClaim(r.Claim); e != nil {
		return jobs.Report{}, e
	}
	rep := jobs.Report{Claim: fenceClaim(r.Claim)}
	switch r.Outcome {
	case api.OutcomeCompleted:
		rep.Outcome = fence.OutcomeCompleted
		if r.Error != "" {
			return rep, badRequest(api.CodeInvalidRequest, "a completed report carries no \"error\"")
		}
		if len(r.Output) > api.MaxOutputBytes {
			return rep, badRequest(api.CodeTooLarge, "output of %d bytes exceeds the limit of %d", len(r.Output), api.MaxOutputBytes)
		}
		if len(r.Output) > 0 && !bytes.Equal(bytes.TrimSpace(r.Output), []byte("null")) {
			rep.Output = r.Output
		}
	case api.OutcomeFailed:
		rep.Outcome = fence.OutcomeFailed
		if len(r.Output) > 0 {
			return rep, badRequest(api.CodeInvalidRequest, "a failed report carries no \"output\"")
		}
		rep.Error = r.Error
		if rep.Error == "" {
			rep.Error = "failed without a message"
		}
		if len(rep.Error) > api.MaxErrorBytes {
			rep.Error = rep.Error[:api.MaxErrorBytes] + "… (truncated)"
		}
	case "":
		return rep, badRequest(api.CodeInvalidRequest, "missing field \"outcome\": completed or failed")
	default:
		return rep, badRequest(api.CodeInvalidRequest, "outcome %q is unknown: use completed or failed", r.Outcome)
	}
	return rep, nil
}

func (t *Tenant) reportOne(idText string, body []byte) (route, *apiError) {
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
		var rej *fence.Rejection
		switch {
		case errors.Is(err, jobs.ErrNotFound):
			return notFound(idText), nil
		case errors.As(err, &rej):
			return rejected(rej), nil
		case err != nil:
			return result{}, err
		}
		j := res.Job
		return result{status: statusOK, body: api.ReportResponse{JobID: idText, State: string(j.State), Attempt: j.Attempt,
			Failures: j.Failures, RunAt: ts(j.RunAt), Duplicate: res.Duplicate}}, nil
	}, nil
}

func (t *Tenant) reportBatch(body []byte) (route, *apiError) {
	r, err := api.DecodeReportBatch(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Reports), api.MaxBatchReports, "reports"); e != nil {
		return nil, e
	}
	ids := make([]int64, len(r.Reports))
	reps := make([]jobs.Report, len(r.Reports))
	for i := range r.Reports {
		id, e := parseJobID(r.Reports[i].JobID)
		if e != nil {
			return nil, badRequest(api.CodeInvalidRequest, "reports[%d]: job_id %q is not a job id", i, r.Reports[i].JobID)
		}
		rep, e := validateReport(&r.Reports[i].ReportRequest)
		if e != nil {
			e.msg = fmt.Sprintf("reports[%d]: %s", i, e.msg)
			return nil, e
		}
		ids[i], reps[i] = id, rep
	}
	return func(now int64) (result, error) {
		resp := api.BatchReportResponse{Results: make([]api.BatchReportResult, len(reps))}
		for i, rep := range reps {
			out := api.BatchReportResult{JobID: r.Reports[i].JobID}
			res, err := t.store.Report(now, ids[i], rep, mrandFloat())
			var rej *fence.Rejection
			switch {
			case errors.Is(err, jobs.ErrNotFound):
				out.Error = &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("job %q does not exist", r.Reports[i].JobID)}
			case errors.As(err, &rej):
				out.Error = &api.Error{Code: string(rej.Code), Message: rej.Message}
			case err != nil:
				return result{}, err
			default:
				out.State, out.Duplicate = string(res.Job.State), res.Duplicate
			}
			resp.Results[i] = out
		}
		return result{status: statusOK, body: resp}, nil
	}, nil
}
