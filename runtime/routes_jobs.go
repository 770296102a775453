package runtime

import (
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// ---- enqueue ----

func (t *Tenant) validateEnqueue(i int, r api.EnqueueRequest) (fencestore.NewJob, *api.Error) {
	return t.validateEnqueueSent(i, r, 0)
}

// validateEnqueueSent is validateEnqueue for a request read from JSON: f
// says which fields it sent, so that a field sent as 0 (or "") is refused
// where its range excludes that, rather than taking the default.
func (t *Tenant) validateEnqueueSent(i int, r api.EnqueueRequest, f api.EnqueueRequestFields) (fencestore.NewJob, *api.Error) {
	where := ""
	if i >= 0 {
		where = printf.Sprintf("jobs[%d]: ", i)
	}
	if r.Kind == "" {
		return fencestore.NewJob{}, api.Refuse(api.CodeInvalidRequest, "%smissing field \"kind\"", where)
	}
	k, ok := t.app.Kind(r.Kind)
	if !ok {
		return fencestore.NewJob{}, api.Refuse(api.CodeUnknownKind, "%sunknown job kind %q: this module registers %s", where, r.Kind, kindList(t.app.Kinds()))
	}
	args := []byte(r.Args)
	if len(args) == 0 {
		args = []byte("{}")
	}
	if len(args) > api.MaxArgsBytes {
		return fencestore.NewJob{}, api.Refuse(api.CodeTooLarge, "%sargs of %d bytes exceed the limit of %d (1 MiB): store large data elsewhere and pass a reference", where, len(args), api.MaxArgsBytes)
	}
	if k.Validate != nil {
		if err := k.Validate(args); err != nil {
			return fencestore.NewJob{}, api.Refuse(api.CodeInvalidArgs, "%sargs of %s: %s", where, r.Kind, oneLine(err.Error()))
		}
	}
	n := fencestore.NewJob{Kind: k.Name, Queue: k.Queue, Priority: k.Priority, Args: args,
		MaxAttempts: int64(k.MaxAttempts), LeaseMs: k.Lease.Milliseconds(), TimeoutMs: k.Timeout.Milliseconds(),
		BackoffMs: k.Backoff.Milliseconds(), BackoffMaxMs: k.MaxBackoff.Milliseconds(),
		ConcurrencyKey: k.ConcurrencyKey, RateKey: k.RateKey, RunRegardless: r.RunRegardless}
	if r.Queue != "" {
		if !api.ValidName(r.Queue) {
			return n, api.Refuse(api.CodeInvalidRequest, "%squeue %q is invalid: use %s", where, r.Queue, api.NameRule)
		}
		n.Queue = r.Queue
	}
	if r.Priority != nil {
		if *r.Priority < 0 || *r.Priority > api.MaxPriority {
			return n, api.Refuse(api.CodeInvalidRequest, "%spriority %d is outside 0-%d (0 runs first)", where, *r.Priority, api.MaxPriority)
		}
		n.Priority = *r.Priority
	}
	if r.MaxAttempts != 0 || f.Has(api.EnqueueRequestMaxAttempts) {
		if r.MaxAttempts < 1 || r.MaxAttempts > api.MaxMaxAttempts {
			return n, api.Refuse(api.CodeInvalidRequest, "%smax_attempts %d is outside 1-%d", where, r.MaxAttempts, api.MaxMaxAttempts)
		}
		n.MaxAttempts = int64(r.MaxAttempts)
	}
	if r.LeaseMs != 0 || f.Has(api.EnqueueRequestLeaseMs) {
		if r.LeaseMs < api.MinLease.Milliseconds() || r.LeaseMs > api.MaxLease.Milliseconds() {
			return n, api.Refuse(api.CodeInvalidRequest, "%slease_ms %d is outside %d-%d", where, r.LeaseMs, api.MinLease.Milliseconds(), api.MaxLease.Milliseconds())
		}
		n.LeaseMs = r.LeaseMs
	}
	if r.TimeoutMs != 0 || f.Has(api.EnqueueRequestTimeoutMs) {
		if r.TimeoutMs < api.MinLease.Milliseconds() || r.TimeoutMs > api.MaxTimeout.Milliseconds() {
			return n, api.Refuse(api.CodeInvalidRequest, "%stimeout_ms %d is outside %d-%d", where, r.TimeoutMs, api.MinLease.Milliseconds(), api.MaxTimeout.Milliseconds())
		}
		n.TimeoutMs = r.TimeoutMs
	}
	// No lease runs past the time limit: a longer one is cut to it
	// (heartbeats extend a shorter one up to it).
	n.LeaseMs = min(n.LeaseMs, n.TimeoutMs)
	if r.RunAt != nil {
		ms := r.RunAt.UnixMilli()
		if ms < 0 || ms > maxTimeMs {
			return n, api.Refuse(api.CodeInvalidRequest, "%srun_at is out of range: use a time from 1970 to 9999", where)
		}
		n.RunAt = ms
	}
	tags, e := validTags(where, r.Tags)
	if e != nil {
		return n, e
	}
	n.Tags = tags
	if r.UniqueKey != "" || f.Has(api.EnqueueRequestUniqueKey) {
		if len(r.UniqueKey) == 0 || len(r.UniqueKey) > api.MaxNameBytes*2 {
			return n, api.Refuse(api.CodeInvalidRequest, "%sunique_key of %d bytes is outside 1-%d bytes", where, len(r.UniqueKey), api.MaxNameBytes*2)
		}
		n.UniqueKey = r.UniqueKey
	}
	if r.UniqueWindowMs < 0 || r.UniqueWindowMs > api.MaxUniqueWindow.Milliseconds() || (r.UniqueWindowMs > 0 && r.UniqueKey == "") {
		return n, api.Refuse(api.CodeInvalidRequest, "%sunique_window_ms %d needs a unique_key and must be within 0-%d", where, r.UniqueWindowMs, api.MaxUniqueWindow.Milliseconds())
	}
	n.UniqueWindowMs = r.UniqueWindowMs
	if r.ConcurrencyKey != "" {
		if !api.ValidName(r.ConcurrencyKey) {
			return n, api.Refuse(api.CodeInvalidRequest, "%sconcurrency_key %q is invalid: use %s", where, r.ConcurrencyKey, api.NameRule)
		}
		n.ConcurrencyKey = r.ConcurrencyKey
	}
	if r.RateKey != "" {
		if !api.ValidName(r.RateKey) {
			return n, api.Refuse(api.CodeInvalidRequest, "%srate_key %q is invalid: use %s", where, r.RateKey, api.NameRule)
		}
		n.RateKey = r.RateKey
	}
	if len(r.DependsOn) > api.MaxDependsOn {
		return n, api.Refuse(api.CodeInvalidRequest, "%s%d parents exceed the limit of %d", where, len(r.DependsOn), api.MaxDependsOn)
	}
	for _, d := range r.DependsOn {
		if ref, ok := strings.CutPrefix(d, "#"); ok {
			b, err := strconv.Atoi(ref)
			if err != nil || b < 0 || i < 0 || b >= i {
				return n, api.Refuse(api.CodeInvalidRequest, "%sdepends_on %q: \"#n\" names an earlier job of the same batch", where, d)
			}
			n.Parents = append(n.Parents, fencestore.Parent{Batch: b})
			continue
		}
		id, e := parseJobID(d)
		if e != nil {
			return n, api.Refuse(api.CodeInvalidRequest, "%sdepends_on %q is not a job id", where, d)
		}
		n.Parents = append(n.Parents, fencestore.Parent{ID: id, Batch: -1})
	}
	if r.RunRegardless && len(r.DependsOn) == 0 {
		return n, api.Refuse(api.CodeInvalidRequest, "%srun_regardless needs depends_on", where)
	}
	return n, validFlow(where, r, &n)
}

// validFlow checks an enqueue's debounce and throttle into n: each names
// a key and a window, and neither goes with the other, a unique key, a
// run_at or parents (each of those decides on its own which job an
// enqueue gets, or when it runs).
func validFlow(where string, r api.EnqueueRequest, n *fencestore.NewJob) *api.Error {
	if r.Debounce == nil && r.Throttle == nil {
		return nil
	}
	what := "throttle"
	if r.Debounce != nil {
		what = "debounce"
	}
	switch {
	case r.Debounce != nil && r.Throttle != nil:
		return api.Refuse(api.CodeInvalidRequest, "%sdebounce and throttle go one at a time: choose one", where)
	case r.UniqueKey != "" || r.RunAt != nil || len(r.DependsOn) > 0:
		return api.Refuse(api.CodeInvalidRequest, "%s%s does not go with unique_key, run_at or depends_on: it decides itself which job an enqueue gets and when it runs", where, what)
	}
	if t := r.Throttle; t != nil {
		if !api.ValidName(t.Key) {
			return api.Refuse(api.CodeInvalidRequest, "%sthrottle key %q is invalid: use %s", where, t.Key, api.NameRule)
		}
		if t.WindowMs < 1 || t.WindowMs > flow.MaxWindowMs {
			return api.Refuse(api.CodeInvalidRequest, "%sthrottle window_ms %d is outside 1-%d (a day)", where, t.WindowMs, flow.MaxWindowMs)
		}
		n.ThrottleKey, n.ThrottleWindowMs = t.Key, t.WindowMs
		return nil
	}
	d := flow.Debounce{Key: r.Debounce.Key, WindowMs: r.Debounce.WindowMs, MaxWaitMs: r.Debounce.MaxWaitMs, Keep: r.Debounce.Keep}
	if d.Keep == "" {
		d.Keep = flow.KeepLast
	}
	if !api.ValidName(d.Key) {
		return api.Refuse(api.CodeInvalidRequest, "%sdebounce key %q is invalid: use %s", where, d.Key, api.NameRule)
	}
	if p := d.Problem(); p != "" {
		return api.Refuse(api.CodeInvalidRequest, "%s%s", where, p)
	}
	n.Debounce = &d
	return nil
}

func validTags(where string, tags []string) ([]byte, *api.Error) {
	if len(tags) == 0 {
		return nil, nil
	}
	if len(tags) > api.MaxTags {
		return nil, api.Refuse(api.CodeInvalidRequest, "%s%d tags exceed the limit of %d", where, len(tags), api.MaxTags)
	}
	for _, tag := range tags {
		if tag == "" || len(tag) > api.MaxTagBytes {
			return nil, api.Refuse(api.CodeInvalidRequest, "%stag %q must be 1-%d bytes", where, tag, api.MaxTagBytes)
		}
	}
	return jsonwire.AppendStrings(nil, tags), nil
}

func (t *Tenant) enqueueOne(body []byte) (route, *api.Error) {
	r, f, err := api.DecodeEnqueueFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	n, e := t.validateEnqueueSent(-1, r, f)
	if e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		if n.RunAt == 0 {
			n.RunAt = now
		}
		js, err := t.store.Enqueue(now, []fencestore.NewJob{n})
		if err != nil {
			return result{}, err
		}
		v := jobView(js[0].Job)
		v.Args = nil // the caller sent them; echoing up to 1 MiB back helps nobody
		v.Existing = js[0].Existing
		status := statusCreated
		if v.Existing {
			status = statusOK
		}
		return result{status: status, body: v.AppendJSON}, nil
	}, nil
}

func (t *Tenant) enqueueBatch(body []byte) (route, *api.Error) {
	r, fs, err := api.DecodeEnqueueBatchFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Jobs), api.MaxBatchJobs, "jobs"); e != nil {
		return nil, e
	}
	ns := make([]fencestore.NewJob, len(r.Jobs))
	for i, j := range r.Jobs {
		var e *api.Error
		if ns[i], e = t.validateEnqueueSent(i, j, fs[i]); e != nil {
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
		for i, j := range js {
			resp.Jobs[i] = jobView(j.Job)
			resp.Jobs[i].Args = nil
			resp.Jobs[i].Existing = j.Existing
		}
		return result{status: statusCreated, body: resp.AppendJSON}, nil
	}, nil
}

func jobView(j fencestore.Job) api.Job {
	v := api.Job{ID: fmtID(j.ID), Kind: j.Kind, Queue: j.Queue, Priority: j.Priority, Args: j.Args,
		State: string(j.State), Attempt: j.Attempt, Failures: j.Failures, MaxAttempts: j.MaxAttempts,
		LeaseMs: j.LeaseMs, TimeoutMs: j.TimeoutMs, RunAt: ts(j.RunAt), CreatedAt: ts(j.CreatedAt),
		FinishedAt: tsPtr(j.FinishedAt), Output: j.Output, LastError: j.LastError, Tags: tagList(j.Tags),
		UniqueKey: j.UniqueKey, ConcurrencyKey: j.ConcurrencyKey, RateKey: j.RateKey, DebounceKey: j.DebounceKey, Keep: j.DebounceKeep,
		Collapsed: j.Collapsed, ThrottleKey: j.ThrottleKey, PendingParents: j.PendingParents,
		RunRegardless: j.RunRegardless, CancelRequestedAt: tsPtr(j.CancelAt), Progress: j.Progress}
	if j.State == fence.StateRunning {
		v.Running = &api.Attempt{Attempt: j.Attempt, Worker: j.Worker, ClaimedAt: ts(j.ClaimedAt), LeaseUntil: ts(j.LeaseUntil),
			Heartbeats: j.Heartbeats}
		if j.Heartbeats > 0 {
			v.Running.LastHeartbeatAt = tsPtr(j.LastHeartbeatAt)
		}
	}
	return v
}

// tagList reads a stored JSON array of tags.
func tagList(b []byte) []string {
	if len(b) > 2 {
		if tags, err := jsonwire.DecodeStrings(b); err == nil { // written by the store from valid tags
			return tags
		}
	}
	return []string{}
}

// ---- get, list ----

func (t *Tenant) getJob(idText, query string) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	waitMs, e := parseWait(query)
	if e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		j, err := t.store.Get(id)
		if err != nil {
			return result{}, err
		}
		v := jobView(j)
		atts, err := t.store.Attempts(id)
		if err != nil {
			return result{}, err
		}
		ended := make([]fence.AttemptEnd, len(atts))
		for i, a := range atts {
			att := api.Attempt{Attempt: a.Attempt, Worker: a.Worker, ClaimedAt: ts(a.ClaimedAt),
				LeaseUntil: ts(a.LeaseUntil), EndedAt: tsPtr(a.EndedAt), Outcome: a.Outcome, Error: a.Error, NoticedBy: a.NoticedBy,
				Heartbeats: a.Heartbeats}
			if a.Heartbeats > 0 {
				att.LastHeartbeatAt = tsPtr(a.LastHeartbeatAt)
			}
			v.Attempts = append(v.Attempts, att)
			ended[i] = fence.AttemptEnd{Attempt: a.Attempt, Worker: a.Worker, Outcome: a.Outcome, Error: a.Error, NoticedBy: a.NoticedBy}
		}
		rejs, err := t.store.Rejections(id)
		if err != nil {
			return result{}, err
		}
		refused := make([]fence.RefusedReport, len(rejs))
		for i, r := range rejs {
			v.Rejections = append(v.Rejections, api.Rejection{At: ts(r.At), Request: r.Request, Worker: r.Worker,
				Attempt: r.Attempt, Outcome: r.Outcome, Code: api.Code(r.Code), Message: r.Message})
			refused[i] = fence.RefusedReport{Attempt: r.Attempt, Request: r.Request, Code: r.Code}
		}
		v.RanAgain = fence.RanAgain(ended, v.Running != nil, refused)
		if v.Waiting, err = t.waiting(now, v); err != nil {
			return result{}, err
		}
		deps, err := t.store.Deps(id)
		if err != nil {
			return result{}, err
		}
		for _, d := range deps {
			v.DependsOn = append(v.DependsOn, api.Dependency{JobID: fmtID(d.ParentID), Resolved: d.Resolved, ResolvedAt: tsPtr(d.ResolvedAt)})
		}
		res := result{status: statusOK, body: v.AppendJSON}
		if waitMs > 0 && !fence.State(v.State).Terminal() {
			// Held by the host until a job ends, then asked again.
			res.holdMs, res.holdFinish = waitMs, true
		}
		return res, nil
	}, nil
}

// parseWait reads the one parameter of GET /jobs/{id}: wait_ms, how long
// to hold the answer until the job is final (0-MaxWait).
func parseWait(raw string) (int64, *api.Error) {
	q, e := query(raw)
	if e != nil {
		return 0, e
	}
	for k := range q {
		if k != "wait_ms" {
			return 0, api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use wait_ms", k)
		}
	}
	s, ok := q["wait_ms"]
	if !ok {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > api.MaxWait.Milliseconds() {
		return 0, api.Refuse(api.CodeInvalidRequest, "wait_ms=%q is outside 0-%d", s, api.MaxWait.Milliseconds())
	}
	return n, nil
}

func (t *Tenant) listJobs(raw string) (route, *api.Error) {
	q, e := query(raw)
	if e != nil {
		return nil, e
	}
	f, e := jobFilter(q, true)
	if e != nil {
		return nil, e
	}
	return func(int64) (result, error) {
		js, cut, scanned, err := t.store.Search(f)
		if err != nil {
			return result{}, err
		}
		resp := api.ListResponse{Jobs: make([]api.Job, len(js))}
		for i, j := range js {
			resp.Jobs[i] = jobView(j)
		}
		switch {
		case len(js) > 0 && (len(js) == f.Limit || cut):
			resp.Next = fmtID(js[len(js)-1].ID)
		case scanned != 0:
			// A search read all it may of one page: the next reads on.
			resp.Next = fmtID(scanned)
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}, nil
}

// jsonPath is the JSON path of a search's dotted path: names of letters,
// digits, '_' and '-' (quoted), array indexes as numbers.
func jsonPath(dotted string) (string, bool) {
	b := []byte("$")
	for _, seg := range strings.Split(dotted, ".") {
		if seg == "" || len(seg) > api.MaxNameBytes {
			return "", false
		}
		if n, err := strconv.Atoi(seg); err == nil && n >= 0 {
			b = append(append(append(b, '['), seg...), ']')
			continue
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return "", false
			}
		}
		b = append(append(append(b, '.', '"'), seg...), '"')
	}
	return string(b), true
}

// jobFilter reads the query of GET /jobs (or a bulk operation's filter,
// without paging: paged false) into a filter.
func jobFilter(q map[string]string, paged bool) (fencestore.ListFilter, *api.Error) {
	f := fencestore.ListFilter{State: q["state"], Queue: q["queue"], Kind: q["kind"], Limit: 100, MaxBytes: api.MaxAnswerBytes,
		Tag: q["tag"], ErrorText: q["error"]}
	for k, v := range q {
		switch col, path, _ := strings.Cut(k, "."); {
		case k == "state", k == "queue", k == "kind", k == "tag", k == "error":
		case (k == "after" || k == "limit") && paged:
		case (col == "args" || col == "output") && path == "":
			if !jsonwire.Valid([]byte(v)) || strings.TrimSpace(v)[0] != '{' {
				return f, api.Refuse(api.CodeInvalidRequest, "%s=%q is not a JSON object: search jobs whose %s contain it with %s={\"customer\":{\"id\":42}}", k, v, col, col)
			}
			f.Matches = append(f.Matches, fencestore.Match{Column: col, Value: v, Contains: true})
		case col == "args" || col == "output":
			p, ok := jsonPath(path)
			if !ok {
				return f, api.Refuse(api.CodeInvalidRequest, "%s: a path is names of letters, digits, '_' and '-', or array indexes, joined by dots (args.customer.id, args.items.0)", k)
			}
			val := v
			if !jsonwire.Valid([]byte(v)) {
				val = string(jsonwire.AppendString(nil, v)) // not JSON: the string itself
			}
			f.Matches = append(f.Matches, fencestore.Match{Column: col, Path: p, Value: val})
		default:
			return f, api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use state, queue, kind, after, limit, tag, error, args.<path>, output.<path>, args, output", k)
		}
	}
	if f.State != "" && !fence.State(f.State).Valid() {
		return f, api.Refuse(api.CodeInvalidRequest, "state %q is unknown: use one of %s", f.State, stateList())
	}
	if a := q["after"]; a != "" {
		id, err := strconv.ParseInt(a, 10, 64)
		if err != nil || id < 0 {
			return f, api.Refuse(api.CodeInvalidRequest, "after=%q is not a job id", a)
		}
		f.After = id
	}
	if l := q["limit"]; l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > api.MaxList {
			return f, api.Refuse(api.CodeInvalidRequest, "limit=%q is outside 1-%d", l, api.MaxList)
		}
		f.Limit = n
	}
	return f, nil
}

func stateList() string {
	s := make([]string, len(fence.States))
	for i, st := range fence.States {
		s[i] = string(st)
	}
	return strings.Join(s, ", ")
}

// ---- cancel, retry, delete ----

func (t *Tenant) cancel(idText string, body []byte) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	r, err := api.DecodeCancel(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if len(r.Reason) > api.MaxErrorBytes {
		return nil, api.Refuse(api.CodeInvalidRequest, "reason is longer than %d bytes", api.MaxErrorBytes)
	}
	return func(now int64) (result, error) {
		j, err := t.store.Cancel(now, id, r.Reason)
		res, err := jobOutcome(j, err)
		res.finished = true
		return res, err
	}, nil
}

func (t *Tenant) retry(idText string) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		j, err := t.store.Get(id)
		if err != nil {
			return result{}, err
		}
		if refused := t.registered(j.Kind); refused != nil {
			return result{}, refused
		}
		j, err = t.store.Retry(now, id)
		return jobOutcome(j, err)
	}, nil
}

// jobOutcome answers an operator's action with the job as it is now.
func jobOutcome(j fencestore.Job, err error) (result, error) {
	if err != nil {
		return result{}, err
	}
	return result{status: statusOK, body: jobView(j).AppendJSON}, nil
}

func (t *Tenant) deleteJob(idText string) (route, *api.Error) {
	id, e := parseJobID(idText)
	if e != nil {
		return nil, e
	}
	return func(int64) (result, error) {
		if err := t.store.Delete(id); err != nil {
			return result{}, err
		}
		return result{status: statusNoContent}, nil
	}, nil
}
