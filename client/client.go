package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/jsonwire"
)

// Client talks to one Stile deployment.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a client for the deployment at baseURL (e.g.
// http://127.0.0.1:8787) authenticating with token. hc may be nil.
func New(baseURL, token string, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: strings.TrimSuffix(baseURL, "/"), token: token, http: hc}
}

// BaseURL is the deployment's URL, as given to New without a trailing
// slash.
func (c *Client) BaseURL() string { return c.base }

// Tenant returns a handle on one tenant.
func (c *Client) Tenant(name string) *Tenant { return &Tenant{c: c, name: name} }

// Retryable reports whether a request that failed with err may succeed if
// sent again: a transport failure, or an answer of the server's own
// trouble (5xx, including a platform's plain-text 500, or 429). A refusal
// of the request itself (4xx) will be refused again, and so will a bug of
// the tenant module that the same state meets again (decide_panicked,
// event_undecodable) until a module that fixes it is deployed.
func Retryable(err error) bool {
	var e *api.Error
	if !errors.As(err, &e) {
		return err != nil
	}
	if e.Code == api.CodeDecidePanicked || e.Code == api.CodeEventUndecodable {
		return false
	}
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Code == api.CodeInternal
}

// Code returns the API error code of err, or "" if err is not an
// *api.Error.
func Code(err error) api.Code {
	var e *api.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Raw sends a request with a raw body and returns the status and body. It
// is for tools and tests that need to send what the typed methods will not.
func (c *Client) Raw(ctx context.Context, method, path string, body []byte, header http.Header) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if req.Header.Get("Authorization") == "" && c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Tenant is a handle on one tenant's API.
type Tenant struct {
	c    *Client
	name string
}

// Name is the tenant's name.
func (t *Tenant) Name() string { return t.name }

// path is r's path for this tenant (api.Route.Path), and the query
// string if q has values.
func (t *Tenant) path(r api.Route, q url.Values, params ...string) string {
	p := r.Path(t.name, params...)
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// do sends route r, its path filled with params and q, with in (nil: no
// body) as JSON, and decodes the answer into out (nil: ignored). A non-2xx
// answer is an *api.Error.
//
// The API's types write themselves (AppendJSON, the bytes MarshalJSON
// gives, without encoding/json's reflection and its check of what
// MarshalJSON returned); anything else goes through encoding/json.
func (t *Tenant) do(ctx context.Context, r api.Route, q url.Values, in, out any, params ...string) error {
	var body []byte
	switch v := in.(type) {
	case nil:
	case jsonwire.Appender:
		body = v.AppendJSON(nil)
	default:
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s: encode the request: %w", r, err)
		}
	}
	return t.c.call(ctx, r.Method, t.path(r, q, params...), body, out)
}

// answer is out for an answer that package api has a generated decoder
// for (its "answer" decoders: claims, heartbeats, reports, settlements,
// the end of a push), which reads it without reflection, as encoding/json
// would. They are what an executor reads for every job it runs; other
// answers are read by encoding/json.
type answer[T any] struct {
	v      *T
	decode func([]byte) (T, error)
}

func (a answer[T]) read(b []byte) (err error) {
	*a.v, err = a.decode(b)
	return err
}

// reader is an out that reads the answer itself (answer).
type reader interface{ read(b []byte) error }

// call sends method and path with body (nil: none) and decodes the
// answer into out (nil: ignored); a non-2xx answer is an *api.Error.
func (c *Client) call(ctx context.Context, method, p string, body []byte, out any) error {
	status, b, err := c.Raw(ctx, method, p, body, nil)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, p, err)
	}
	return readAnswer(method, p, status, b, out)
}

// readAnswer decodes an answer of status and body b into out (nil:
// ignored); a non-2xx answer is an *api.Error.
func readAnswer(method, p string, status int, b []byte, out any) (err error) {
	if status < 200 || status > 299 {
		var e api.Error
		if json.Unmarshal(b, &e) != nil || e.Code == "" {
			e = api.Error{Code: api.Code("http_" + fmt.Sprint(status)), Message: strings.TrimSpace(string(b))}
		}
		e.Status = status
		return &e
	}
	if out == nil {
		return nil
	}
	if r, ok := out.(reader); ok {
		err = r.read(b)
	} else {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, p, err)
	}
	return nil
}

// Enqueue adds one job.
func (t *Tenant) Enqueue(ctx context.Context, r api.EnqueueRequest) (api.Job, error) {
	var j api.Job
	err := t.do(ctx, api.RouteEnqueue, nil, r, &j)
	return j, err
}

// EnqueueArgs adds the job of typed args (api.JobArgs): their kind, their
// JSON, and the options set in opts (its Kind and Args empty).
func (t *Tenant) EnqueueArgs(ctx context.Context, args api.JobArgs, opts api.EnqueueRequest) (api.Job, error) {
	r, err := api.EnqueueOf(args, opts)
	if err != nil {
		return api.Job{}, err
	}
	return t.Enqueue(ctx, r)
}

// EnqueueBatch adds many jobs in one transaction: all or none.
func (t *Tenant) EnqueueBatch(ctx context.Context, rs []api.EnqueueRequest) ([]api.Job, error) {
	var out api.EnqueueBatchResponse
	err := t.do(ctx, api.RouteEnqueueMany, nil, api.EnqueueBatchRequest{Jobs: rs}, &out)
	return out.Jobs, err
}

// Job reads a job with its attempt history and refused reports.
func (t *Tenant) Job(ctx context.Context, id string) (api.Job, error) {
	var j api.Job
	err := t.do(ctx, api.RouteGetJob, nil, nil, &j, id)
	return j, err
}

// Claim takes ready jobs (see api.ClaimRequest; WaitMs long-polls).
func (t *Tenant) Claim(ctx context.Context, r api.ClaimRequest) (api.ClaimResponse, error) {
	var out api.ClaimResponse
	err := t.do(ctx, api.RouteClaim, nil, r, answer[api.ClaimResponse]{&out, api.DecodeClaimResponse})
	return out, err
}

// Heartbeat extends the lease of a claim; a lost lease is an *Error with
// errors.Is(err, api.ErrStale).
func (t *Tenant) Heartbeat(ctx context.Context, id string, c api.Claim) (api.HeartbeatResponse, error) {
	return t.HeartbeatProgress(ctx, id, c, nil)
}

// HeartbeatProgress is a heartbeat that also publishes the handler's
// progress (a JSON value of at most api.MaxProgressBytes), fenced like
// the heartbeat: a refused one writes neither.
func (t *Tenant) HeartbeatProgress(ctx context.Context, id string, c api.Claim, progress json.RawMessage) (api.HeartbeatResponse, error) {
	var out api.HeartbeatResponse
	err := t.do(ctx, api.RouteHeartbeat, nil, api.HeartbeatRequest{Claim: c, Progress: progress}, answer[api.HeartbeatResponse]{&out, api.DecodeHeartbeatResponse}, id)
	return out, err
}

// Report records how an attempt ended. A refused report is an *Error with
// errors.Is(err, api.ErrStale); it wrote nothing.
func (t *Tenant) Report(ctx context.Context, id string, r api.ReportRequest) (api.ReportResponse, error) {
	var out api.ReportResponse
	err := t.do(ctx, api.RouteReport, nil, r, answer[api.ReportResponse]{&out, api.DecodeReportResponse}, id)
	return out, err
}

// ReportBatch records many outcomes in one transaction, each fenced on its
// own; results are in request order.
func (t *Tenant) ReportBatch(ctx context.Context, rs []api.BatchReport) ([]api.BatchReportResult, error) {
	var out api.BatchReportResponse
	err := t.do(ctx, api.RouteReportMany, nil, api.BatchReportRequest{Reports: rs}, answer[api.BatchReportResponse]{&out, api.DecodeBatchReportResponse})
	return out.Results, err
}

// Status describes the tenant.
func (t *Tenant) Status(ctx context.Context) (api.Status, error) {
	var out api.Status
	err := t.do(ctx, api.RouteStatus, nil, nil, &out)
	return out, err
}

// Cancel cancels a job: at once if it waits, through its worker if it runs.
func (t *Tenant) Cancel(ctx context.Context, id, reason string) (api.Job, error) {
	var j api.Job
	err := t.do(ctx, api.RouteCancel, nil, api.CancelRequest{Reason: reason}, &j, id)
	return j, err
}

// Retry runs a dead or cancelled job again with a fresh retry budget.
func (t *Tenant) Retry(ctx context.Context, id string) (api.Job, error) {
	var j api.Job
	err := t.do(ctx, api.RouteRetry, nil, nil, &j, id)
	return j, err
}

// Delete removes a finished job and its history.
func (t *Tenant) Delete(ctx context.Context, id string) error {
	return t.do(ctx, api.RouteDeleteJob, nil, nil, nil, id)
}

// List lists jobs in id order (state, queue, kind filter; after pages on).
func (t *Tenant) List(ctx context.Context, state, queue, kind, after string, limit int) (api.ListResponse, error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": state, "queue": queue, "kind": kind, "after": after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	var out api.ListResponse
	err := t.do(ctx, api.RouteListJobs, q, nil, &out)
	return out, err
}

// Search lists the jobs a query finds: the parameters of GET /jobs, with
// args.<path>=value, output.<path>=value, args={object} and
// output={object} (contained), tag and error (text contained), e.g.
// url.Values{"args.customer.id": {"42"}, "state": {"dead"}}. A search reads
// a bounded number of jobs per page: follow Next until it is empty, even
// past a page that found none.
func (t *Tenant) Search(ctx context.Context, q url.Values) (api.ListResponse, error) {
	var out api.ListResponse
	err := t.do(ctx, api.RouteListJobs, q, nil, &out)
	return out, err
}

// Queues counts jobs per queue and state.
func (t *Tenant) Queues(ctx context.Context) (api.QueuesResponse, error) {
	var out api.QueuesResponse
	err := t.do(ctx, api.RouteQueues, nil, nil, &out)
	return out, err
}

// SetLimit sets a concurrency limit.
func (t *Tenant) SetLimit(ctx context.Context, key string, slots int64) (api.Limit, error) {
	var out api.Limit
	err := t.do(ctx, api.RouteSetLimit, nil, api.SetLimitRequest{Slots: &slots}, &out, key)
	return out, err
}

// Limits lists the concurrency limits.
func (t *Tenant) Limits(ctx context.Context) ([]api.Limit, error) {
	var out api.LimitsResponse
	err := t.do(ctx, api.RouteLimits, nil, nil, &out)
	return out.Limits, err
}

// SetRate sets a rate limit: at most limit jobs with the key start in any
// window of period (rounded down to milliseconds).
func (t *Tenant) SetRate(ctx context.Context, key string, limit int64, period time.Duration) (api.Rate, error) {
	var out api.Rate
	ms := period.Milliseconds()
	err := t.do(ctx, api.RouteSetRate, nil, api.SetRateRequest{Limit: &limit, PeriodMs: &ms}, &out, key)
	return out, err
}

// Rate reads one rate limit: where its window stands and what it did.
func (t *Tenant) Rate(ctx context.Context, key string) (api.Rate, error) {
	var out api.Rate
	err := t.do(ctx, api.RouteGetRate, nil, nil, &out, key)
	return out, err
}

// Rates lists the rate limits.
func (t *Tenant) Rates(ctx context.Context) ([]api.Rate, error) {
	var out api.RatesResponse
	err := t.do(ctx, api.RouteRates, nil, nil, &out)
	return out.Rates, err
}

// DeleteRate removes the tenant's rate limit of key. A key the module
// declares goes back to the module's default, which it returns; any other
// is removed (removed true), unless a job not finished yet names it
// (api.CodeRateKeyInUse).
func (t *Tenant) DeleteRate(ctx context.Context, key string) (r api.Rate, removed bool, err error) {
	p := t.path(api.RouteDeleteRate, nil, key)
	status, b, err := t.c.Raw(ctx, "DELETE", p, nil, nil)
	if err != nil {
		return api.Rate{}, false, fmt.Errorf("DELETE %s: %w", p, err)
	}
	if status == http.StatusNoContent {
		return api.Rate{}, true, nil
	}
	err = readAnswer("DELETE", p, status, b, &r)
	return r, false, err
}

// PutSchedule creates or replaces a schedule.
func (t *Tenant) PutSchedule(ctx context.Context, name string, r api.ScheduleRequest) (api.Schedule, error) {
	var out api.Schedule
	err := t.do(ctx, api.RoutePutSchedule, nil, r, &out, name)
	return out, err
}

// Schedule reads a schedule.
func (t *Tenant) Schedule(ctx context.Context, name string) (api.Schedule, error) {
	var out api.Schedule
	err := t.do(ctx, api.RouteGetSchedule, nil, nil, &out, name)
	return out, err
}

// Failing reads what is failing in the tenant now: jobs retrying or dead
// grouped by kind and error, reactions with failing deliveries, stalled
// projections.
func (t *Tenant) Failing(ctx context.Context) (api.FailingResponse, error) {
	var out api.FailingResponse
	err := t.do(ctx, api.RouteFailing, nil, nil, &out)
	return out, err
}

// StartOperation starts a bulk operation: action ("retry", "cancel",
// "delete") on every job filter (GET /jobs's query) finds, run by the
// tenant in slices; Operation reads its progress.
func (t *Tenant) StartOperation(ctx context.Context, action, filter string) (api.Operation, error) {
	var out api.Operation
	err := t.do(ctx, api.RouteStartOp, nil, api.OperationRequest{Action: action, Filter: filter}, &out)
	return out, err
}

// Replay starts a replay of reaction (a policy): every event of its types
// from fromSeq up to its checkpoint is delivered to it again, in order,
// run by the tenant in slices; Operation reads its progress.
func (t *Tenant) Replay(ctx context.Context, reaction string, fromSeq int64) (api.Operation, error) {
	var out api.Operation
	err := t.do(ctx, api.RouteStartOp, nil, api.OperationRequest{Action: "replay", Reaction: reaction, FromSeq: fromSeq}, &out)
	return out, err
}

// Operations lists the newest bulk operations, newest first.
func (t *Tenant) Operations(ctx context.Context) ([]api.Operation, error) {
	var out api.OperationsResponse
	err := t.do(ctx, api.RouteOperations, nil, nil, &out)
	return out.Operations, err
}

// Operation reads a bulk operation's progress.
func (t *Tenant) Operation(ctx context.Context, id string) (api.Operation, error) {
	var out api.Operation
	err := t.do(ctx, api.RouteGetOperation, nil, nil, &out, id)
	return out, err
}

// PauseReaction pauses (paused true) or resumes a reaction: while paused,
// claims hand out none of its deliveries, and its events wait.
func (t *Tenant) PauseReaction(ctx context.Context, handler string, paused bool) error {
	return t.do(ctx, api.RoutePauseReaction, nil, api.ReactionPause{Paused: paused}, nil, handler)
}

// DeleteSchedule removes a schedule; the jobs it enqueued stay.
func (t *Tenant) DeleteSchedule(ctx context.Context, name string) error {
	return t.do(ctx, api.RouteDelSchedule, nil, nil, nil, name)
}

// Tx runs a transaction registered in the module with input (any JSON
// value) and decodes its result into out (which may be nil).
func (t *Tenant) Tx(ctx context.Context, name string, input, out any) error {
	var r api.TxResult
	if err := t.do(ctx, api.RouteTx, nil, input, &r, name); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(r.Result, out)
}

// Pushes lists the tenant's pushes to executors in flight.
func (t *Tenant) Pushes(ctx context.Context) (api.PushStatus, error) {
	var out api.PushStatus
	err := t.do(ctx, api.RoutePushes, nil, nil, &out)
	return out, err
}

// EndPush ends a push: an executor says it stopped claiming (how:
// api.PushDrained or api.PushBudgetSpent), a transport that it could not
// deliver it (api.PushFailed, with why).
func (t *Tenant) EndPush(ctx context.Context, id, how, why string) (api.PushDoneResponse, error) {
	var out api.PushDoneResponse
	err := t.do(ctx, api.RoutePushDone, nil, api.PushDone{End: how, Error: why}, answer[api.PushDoneResponse]{&out, api.DecodePushDoneResponse}, id)
	return out, err
}

// Tenants reads a page of the deployment's tenant directory; a ready
// query with WaitMs long-polls for tenants that became ready after
// AfterSeq.
func (c *Client) Tenants(ctx context.Context, q api.TenantsQuery) (api.TenantsResponse, error) {
	v := url.Values{}
	if q.After != "" {
		v.Set("after", q.After)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Ready {
		v.Set("ready", "true")
	}
	if q.AfterSeq > 0 {
		v.Set("after_seq", strconv.FormatInt(q.AfterSeq, 10))
	}
	if q.WaitMs > 0 {
		v.Set("wait_ms", strconv.FormatInt(q.WaitMs, 10))
	}
	var out api.TenantsResponse
	err := c.call(ctx, "GET", api.TenantsPath+"?"+v.Encode(), nil, &out)
	return out, err
}

// Failing reads what is failing across the deployment's tenants whose
// names start with prefix ("": every tenant the token covers), from what
// each told the directory (GET /v1/failing): a tenant tells it within
// api.FailingNoteEvery of a change.
func (c *Client) Failing(ctx context.Context, prefix string) (api.FleetFailingResponse, error) {
	path := api.FailingPath
	if prefix != "" {
		path += "?" + url.Values{"prefix": {prefix}}.Encode()
	}
	var out api.FleetFailingResponse
	err := c.call(ctx, "GET", path, nil, &out)
	return out, err
}

// StartFleetOperation gives a bulk operation to every tenant whose name
// starts with r.Prefix, through the directory (POST /v1/operations): the
// first tenant's refusal of the filter refuses it whole.
func (c *Client) StartFleetOperation(ctx context.Context, r api.FleetOperationRequest) (api.FleetOperation, error) {
	var out api.FleetOperation
	err := c.call(ctx, "POST", api.FleetOperationsPath, r.AppendJSON(nil), &out)
	return out, err
}

// FleetOperations lists the newest operations across tenants the token
// may see, without their tenants' parts (and without reading them).
func (c *Client) FleetOperations(ctx context.Context) (api.FleetOperationsResponse, error) {
	var out api.FleetOperationsResponse
	err := c.call(ctx, "GET", api.FleetOperationsPath, nil, &out)
	return out, err
}

// FleetOperation reads an operation across tenants, with the progress of
// the tenants' operations not yet done (reading it moves them on).
func (c *Client) FleetOperation(ctx context.Context, id string) (api.FleetOperation, error) {
	var out api.FleetOperation
	err := c.call(ctx, "GET", api.FleetOperationsPath+"/"+url.PathEscape(id), nil, &out)
	return out, err
}

// JobFailed is Wait's error for a job that ended dead or cancelled: the
// job, with its last error, is returned beside it.
type JobFailed struct {
	ID, State, LastError string
}

func (e *JobFailed) Error() string {
	return "job " + e.ID + " ended " + e.State + ": " + e.LastError
}

// Wait returns the job once it is final: completed (its output in
// Output), or dead or cancelled (with a *JobFailed error). It long-polls
// GET /jobs/{id}?wait_ms=…, which the host holds until a job ends, so it
// never spins; it returns the job as last seen and ctx's error if ctx ends
// first.
func (t *Tenant) Wait(ctx context.Context, id string) (api.Job, error) {
	for {
		wait := api.MaxWait
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(d))
		}
		var j api.Job
		err := t.do(ctx, api.RouteGetJob, url.Values{"wait_ms": {strconv.FormatInt(max(wait.Milliseconds(), 0), 10)}}, nil, &j, id)
		if err != nil {
			if ctx.Err() != nil {
				return j, ctx.Err()
			}
			return j, err
		}
		switch j.State {
		case "completed":
			return j, nil
		case "dead", "cancelled":
			return j, &JobFailed{ID: j.ID, State: j.State, LastError: j.LastError}
		}
		if ctx.Err() != nil {
			return j, ctx.Err()
		}
	}
}

// Schedules lists the tenant's schedules: its own and those the module
// declares for every tenant (Module set).
func (t *Tenant) Schedules(ctx context.Context) ([]api.Schedule, error) {
	var out api.SchedulesResponse
	err := t.do(ctx, api.RouteSchedules, nil, nil, &out)
	return out.Schedules, err
}

// PauseQueue pauses (or, with false, resumes) a queue: claims take no job
// from a paused one.
func (t *Tenant) PauseQueue(ctx context.Context, queue string, paused bool) (api.QueueState, error) {
	var out api.QueueState
	err := t.do(ctx, api.RoutePauseQueue, nil, api.QueuePause{Paused: paused}, &out, queue)
	return out, err
}

// Storage reads what the tenant stores (GET /storage).
func (t *Tenant) Storage(ctx context.Context) (api.StorageResponse, error) {
	var out api.StorageResponse
	err := t.do(ctx, api.RouteStorage, nil, nil, &out)
	return out, err
}

// Retention reads the tenant's retention policy (GET /retention).
func (t *Tenant) Retention(ctx context.Context) (api.RetentionResponse, error) {
	var out api.RetentionResponse
	err := t.do(ctx, api.RouteRetention, nil, nil, &out)
	return out, err
}

// SetRetention overrides the module's retention for the tenant
// (PUT /retention): the fields in body replace the module's; those left
// out follow it. Pass a raw JSON object, for a partial override, or an
// api.Retention, to override every field.
func (t *Tenant) SetRetention(ctx context.Context, body any) (api.RetentionResponse, error) {
	var out api.RetentionResponse
	err := t.do(ctx, api.RoutePutRetention, nil, body, &out)
	return out, err
}

// Usage reads what the tenant used by UTC day, from from to to inclusive
// (GET /usage; "" for either: the last 30 days to today), with its
// budget. Today's figures include what the object has not recorded yet.
func (t *Tenant) Usage(ctx context.Context, from, to string) (api.UsageResponse, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	var out api.UsageResponse
	err := t.do(ctx, api.RouteUsage, q, nil, &out)
	return out, err
}

// SetBudget gives the tenant its own daily budget (PUT /budget), in place
// of the module's: past it, new work is refused with 429
// budget_exceeded until the UTC day ends.
func (t *Tenant) SetBudget(ctx context.Context, b api.Budget) (api.BudgetResponse, error) {
	var out api.BudgetResponse
	err := t.do(ctx, api.RoutePutBudget, nil, b, &out)
	return out, err
}

// ClearBudget makes the tenant follow the module's budget again
// (DELETE /budget).
func (t *Tenant) ClearBudget(ctx context.Context) (api.BudgetResponse, error) {
	var out api.BudgetResponse
	err := t.do(ctx, api.RouteDelBudget, nil, nil, &out)
	return out, err
}

// Migrate applies the tenant's pending migrations now, trying a failed one
// again (POST /migrations, admin), and returns its status after.
func (t *Tenant) Migrate(ctx context.Context) (api.Status, error) {
	var out api.Status
	err := t.do(ctx, api.RouteMigrate, nil, nil, &out)
	return out, err
}

// ExportPage reads one page of the tenant's export (GET /export, admin):
// cursor "" for the first, then each page's Next; limitBytes 0 for the
// default size.
func (t *Tenant) ExportPage(ctx context.Context, cursor string, limitBytes int) (api.ExportPage, error) {
	q := url.Values{}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limitBytes > 0 {
		q.Set("limit_bytes", strconv.Itoa(limitBytes))
	}
	var out api.ExportPage
	err := t.do(ctx, api.RouteExport, q, nil, &out)
	return out, err
}

// Import writes one export page into the tenant (POST /import, admin):
// the first page into an empty tenant, then the others in order.
func (t *Tenant) Import(ctx context.Context, page api.ExportPage) (api.ImportResult, error) {
	var out api.ImportResult
	err := t.do(ctx, api.RouteImport, nil, page, &out)
	return out, err
}

// AbortImport abandons the import under way (DELETE /import, admin): the
// tables its pages wrote to are emptied, and the tenant serves again.
func (t *Tenant) AbortImport(ctx context.Context) (api.ImportAborted, error) {
	var out api.ImportAborted
	err := t.do(ctx, api.RouteAbortImport, nil, nil, &out)
	return out, err
}

// Create creates the tenant (PUT /v1/t/{tenant}, operator or admin); it
// is idempotent: Created is false when the tenant existed. A request to a
// tenant that was never created is 404 tenant_not_found, unless it is a
// write of a role the deployment lets create tenants.
func (t *Tenant) Create(ctx context.Context) (api.TenantCreated, error) {
	var out api.TenantCreated
	err := t.do(ctx, api.RouteCreateTenant, nil, nil, &out)
	return out, err
}

// Erase deletes every row of the tenant and leaves a tombstone: its later
// requests are 410 (DELETE /v1/t/{tenant}?confirm={tenant}, admin).
func (t *Tenant) Erase(ctx context.Context) (api.Erased, error) {
	var out api.Erased
	err := t.do(ctx, api.RouteErase, url.Values{"confirm": {t.name}}, nil, &out)
	return out, err
}
