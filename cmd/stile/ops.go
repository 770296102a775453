package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Exit codes of the operator commands (docs/OPERATIONS.md).
const (
	exitOK          = 0
	exitFailed      = 1 // the server failed (5xx), or anything else
	exitUsage       = 2 // a command or flag the CLI does not take
	exitRefused     = 3 // the API refused the request (4xx other than 404)
	exitNotFound    = 4 // no such job, schedule, reaction, projection (404)
	exitUnreachable = 5 // the server could not be reached
)

// exitError carries an operator command's exit code.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode maps an API call's error to the command's exit code.
func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	var ae *api.Error
	var ue *url.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ae) && ae.Status == 404:
		return exitNotFound
	case errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500:
		return exitRefused
	case errors.As(err, &ae):
		return exitFailed
	case errors.As(err, &ue):
		return exitUnreachable // no answer from the API at all
	}
	return exitFailed
}

// ops is what every operator command shares: where the API is, whose it
// is, and how to print.
type ops struct {
	fs     *flag.FlagSet
	url    *string
	token  *string
	data   *string
	tenant *string
	asJSON *bool
	out    io.Writer
}

func newOps(name, usage string, tenantScoped bool) *ops {
	o := &ops{fs: flag.NewFlagSet(name, flag.ContinueOnError), out: os.Stdout}
	o.fs.Usage = func() {
		fmt.Fprintf(o.fs.Output(), "usage: stile %s\n\nflags:\n", usage)
		o.fs.PrintDefaults()
	}
	o.url = o.fs.String("url", envOr("STILE_URL", "http://127.0.0.1:8787"), "the Stile API (default $STILE_URL, else stile dev's)")
	o.token = o.fs.String("token", "", "bearer token (default $STILE_TOKEN, else <data>/token of stile dev)")
	o.data = o.fs.String("data", ".stile", "the data directory of stile dev, to find its token")
	if tenantScoped {
		o.tenant = o.fs.String("tenant", os.Getenv("STILE_TENANT"), "the tenant (default $STILE_TENANT)")
	}
	o.asJSON = o.fs.Bool("json", false, "print the API's JSON instead of a table")
	return o
}

// splitVerb takes a command's verb off its arguments ("list" if none).
func splitVerb(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "list", args
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// parse reads the flags; flags may come after the positional arguments.
func (o *ops) parse(args []string) ([]string, error) {
	var pos []string
	for {
		if err := o.fs.Parse(args); err != nil {
			return nil, &exitError{exitUsage, err}
		}
		if o.fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, o.fs.Arg(0))
		args = o.fs.Args()[1:]
	}
}

func (o *ops) client() (*client.Client, error) {
	token, err := findToken(*o.data, *o.token)
	if err != nil {
		return nil, &exitError{exitUsage, err}
	}
	return client.New(*o.url, token, nil), nil
}

func (o *ops) ten() (*client.Tenant, error) {
	if *o.tenant == "" {
		return nil, &exitError{exitUsage, errors.New("name the tenant: --tenant NAME (or $STILE_TENANT)")}
	}
	cl, err := o.client()
	if err != nil {
		return nil, err
	}
	return cl.Tenant(*o.tenant), nil
}

func (o *ops) printJSON(v any) error {
	e := json.NewEncoder(o.out)
	e.SetIndent("", "  ")
	return e.Encode(v)
}

func (o *ops) table(header string, rows [][]string) {
	tw := tabwriter.NewWriter(o.out, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

func when(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000")
}

func at(t time.Time) string { return when(&t) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		return s[:n] + "…"
	}
	return orDash(s)
}

// ---- stile jobs ----

func runJobs(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("jobs "+verb, "jobs [list|show|retry|cancel|delete] [ID | --where QUERY] --tenant NAME [flags]", true)
	state := o.fs.String("state", "", "list: only jobs in this state")
	queue := o.fs.String("queue", "", "list: only jobs of this queue")
	kind := o.fs.String("kind", "", "list: only jobs of this kind")
	after := o.fs.String("after", "", "list: jobs after this id (the next page)")
	limit := o.fs.Int("limit", 50, "list: at most this many")
	reason := o.fs.String("reason", "", "cancel: why, kept with the job")
	whereFlag := o.fs.String("where", "", `list: search, as GET /jobs's query (args.customer.id=42&tag=vip&error=timeout); retry, cancel, delete: act on every job it finds (with --state, --queue, --kind), run by the tenant`)
	all := o.fs.Bool("all", false, "retry, cancel, delete --where: in every tenant the token covers, through the directory")
	prefix := o.fs.String("prefix", "", "retry, cancel, delete --where: in every tenant whose name starts with it, through the directory")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	where, werr := url.ParseQuery(*whereFlag)
	if werr != nil {
		return &exitError{exitUsage, fmt.Errorf("--where %q is not a query (name=value&…): %v", *whereFlag, werr)}
	}
	for k, v := range map[string]string{"state": *state, "queue": *queue, "kind": *kind} {
		if v != "" {
			where.Set(k, v)
		}
	}
	bulk := *whereFlag != "" && verb != "list"
	fleet := *all || *prefix != ""
	if fleet && (!bulk || verb != "retry" && verb != "cancel" && verb != "delete") {
		return &exitError{exitUsage, fmt.Errorf("stile jobs %s: --all and --prefix go with retry, cancel or delete --where", verb)}
	}
	if fleet {
		return o.fleetBulk(context.Background(), verb, where.Encode(), *prefix)
	}
	id := ""
	switch verb {
	case "list":
		if len(pos) > 0 {
			return &exitError{exitUsage, fmt.Errorf("stile jobs list takes flags only, not %q", pos[0])}
		}
	case "show", "retry", "cancel", "delete":
		switch {
		case bulk && verb == "show":
			return &exitError{exitUsage, errors.New("stile jobs show ID: --where goes with list, retry, cancel or delete")}
		case bulk && len(pos) > 0:
			return &exitError{exitUsage, fmt.Errorf("stile jobs %s: name one job, or --where, not both", verb)}
		case !bulk && len(pos) != 1:
			return &exitError{exitUsage, fmt.Errorf("stile jobs %s ID: name one job (or every job a --where finds)", verb)}
		case !bulk:
			id = pos[0]
		}
	default:
		return &exitError{exitUsage, fmt.Errorf("stile jobs %s: use list, show, retry, cancel or delete", verb)}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch verb {
	case "list":
		if *after != "" {
			where.Set("after", *after)
		}
		where.Set("limit", strconv.Itoa(*limit))
		l, err := ten.Search(ctx, where)
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(l)
		}
		rows := make([][]string, len(l.Jobs))
		for i, j := range l.Jobs {
			rows[i] = []string{j.ID, j.Kind, j.Queue, j.State, strconv.FormatInt(j.Attempt, 10) + "/" + strconv.FormatInt(j.MaxAttempts, 10),
				at(j.CreatedAt), oneLine(j.LastError, 60)}
		}
		o.table("ID\tKIND\tQUEUE\tSTATE\tATTEMPT\tCREATED\tLAST ERROR", rows)
		if l.Next != "" {
			fmt.Fprintf(o.out, "more: --after %s\n", l.Next)
		}
		return nil
	case "show":
		j, err := ten.Job(ctx, id)
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(j)
		}
		o.showJob(j)
		return nil
	case "retry", "cancel", "delete":
		if bulk {
			return o.bulk(ctx, ten, verb, where.Encode())
		}
		var j api.Job
		switch verb {
		case "retry":
			j, err = ten.Retry(ctx, id)
		case "cancel":
			j, err = ten.Cancel(ctx, id, *reason)
		default:
			err = ten.Delete(ctx, id)
			j = api.Job{ID: id, State: "deleted"}
		}
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(j)
		}
		fmt.Fprintf(o.out, "job %s: %s\n", j.ID, j.State)
		return nil
	}
	return &exitError{exitUsage, fmt.Errorf("stile jobs %s: use list, show, retry, cancel or delete", verb)}
}

// bulk runs verb on every job filter finds, as a bulk operation the tenant
// runs, and prints its progress until it is done.
func (o *ops) bulk(ctx context.Context, ten *client.Tenant, verb, filter string) error {
	op, err := ten.StartOperation(ctx, verb, filter)
	if err != nil {
		return err
	}
	for op.State != "done" {
		time.Sleep(200 * time.Millisecond)
		if op, err = ten.Operation(ctx, op.ID); err != nil {
			return err
		}
	}
	if *o.asJSON {
		return o.printJSON(op)
	}
	fmt.Fprintf(o.out, "operation %s: %s of %s: %d found, %d done, %d skipped\n", op.ID, verb, op.Filter, op.Matched, op.Done, op.Skipped)
	if op.LastSkip != "" {
		fmt.Fprintf(o.out, "last skipped: %s\n", op.LastSkip)
	}
	return nil
}

// fleetFollow bounds how long stile jobs … --all follows its operation.
const fleetFollow = 10 * time.Minute

// fleetBulk gives a bulk operation to every tenant of prefix through the
// directory, and follows it to done.
func (o *ops) fleetBulk(ctx context.Context, verb, filter, prefix string) error {
	cl, err := o.client()
	if err != nil {
		return err
	}
	op, err := cl.StartFleetOperation(ctx, api.FleetOperationRequest{Action: verb, Filter: filter, Prefix: prefix})
	if err != nil {
		return err
	}
	// Followed for at most fleetFollow: a fleet's operation may run long;
	// it goes on without anyone following it.
	for until := time.Now().Add(fleetFollow); op.State != "done" && time.Now().Before(until); {
		time.Sleep(time.Second)
		if op, err = cl.FleetOperation(ctx, op.ID); err != nil {
			return err
		}
	}
	if *o.asJSON {
		return o.printJSON(op)
	}
	scope := "every tenant"
	if op.Prefix != "" {
		scope = "the tenants of " + op.Prefix + "*"
	}
	fmt.Fprintf(o.out, "operation %s: %s of %s in %s: %d tenants, %d found, %d done, %d skipped, %d tenants refused\n",
		op.ID, verb, op.Filter, scope, op.Tenants, op.Matched, op.Done, op.Skipped, op.Refused)
	if op.State != "done" {
		fmt.Fprintf(o.out, "still running after %s; it goes on: follow it with GET %s/%s\n", fleetFollow, api.FleetOperationsPath, op.ID)
	}
	for _, p := range op.Operations {
		if p.State == "refused" {
			fmt.Fprintf(o.out, "%s refused: %s\n", p.Tenant, p.Error)
		}
	}
	return nil
}

// replay replays handler from seq from, as a bulk operation the tenant
// runs, printing its progress as it moves until it is done.
func (o *ops) replay(ctx context.Context, ten *client.Tenant, handler string, from int64) error {
	op, err := ten.Replay(ctx, handler, from)
	if err != nil {
		return err
	}
	if !*o.asJSON {
		fmt.Fprintf(o.out, "operation %s: replaying %s from event %d up to its checkpoint %d\n", op.ID, handler, from, op.UntilSeq)
	}
	shown := int64(-1)
	for op.State != "done" {
		if !*o.asJSON && op.Matched != shown {
			shown = op.Matched
			fmt.Fprintf(o.out, "  %d found, %d delivered again, %d still open\n", op.Matched, op.Done, op.Skipped)
		}
		time.Sleep(200 * time.Millisecond)
		if op, err = ten.Operation(ctx, op.ID); err != nil {
			return err
		}
	}
	if *o.asJSON {
		return o.printJSON(op)
	}
	fmt.Fprintf(o.out, "operation %s: done: %d found, %d delivered again, %d still open (delivered once)\n", op.ID, op.Matched, op.Done, op.Skipped)
	if op.LastSkip != "" {
		fmt.Fprintf(o.out, "last skipped: %s\n", op.LastSkip)
	}
	return nil
}

// showJob prints a job's timeline: each attempt, what the fence refused,
// and why it ran more than once.
func (o *ops) showJob(j api.Job) {
	fmt.Fprintf(o.out, "job %s  %s  queue %s  %s  attempt %d  failures %d of %d  created %s\n", j.ID, j.Kind, j.Queue, j.State,
		j.Attempt, j.Failures, j.MaxAttempts, at(j.CreatedAt))
	if j.RateKey != "" {
		fmt.Fprintf(o.out, "rate key: %s\n", j.RateKey)
	}
	if j.ConcurrencyKey != "" {
		fmt.Fprintf(o.out, "concurrency key: %s\n", j.ConcurrencyKey)
	}
	if j.RanAgain != "" {
		fmt.Fprintf(o.out, "why: %s\n", j.RanAgain)
	}
	if j.Waiting != "" {
		fmt.Fprintf(o.out, "waiting: %s\n", j.Waiting)
	}
	if j.LastError != "" {
		fmt.Fprintf(o.out, "last error: %s\n", oneLine(j.LastError, 200))
	}
	if len(j.Output) > 0 {
		fmt.Fprintf(o.out, "output: %s\n", oneLine(string(j.Output), 200))
	}
	atts := j.Attempts
	if j.Running != nil {
		atts = append(atts, *j.Running)
	}
	if len(atts) > 0 {
		fmt.Fprintln(o.out)
		rows := make([][]string, len(atts))
		for i, a := range atts {
			outcome := a.Outcome
			if a.EndedAt == nil {
				outcome = "running"
			}
			rows[i] = []string{strconv.FormatInt(a.Attempt, 10), a.Worker, at(a.ClaimedAt), at(a.LeaseUntil),
				strconv.FormatInt(a.Heartbeats, 10), when(a.LastHeartbeatAt), when(a.EndedAt), outcome, orDash(a.NoticedBy), oneLine(a.Error, 60)}
		}
		o.table("ATTEMPT\tWORKER\tCLAIMED\tLEASE UNTIL\tHEARTBEATS\tLAST HEARTBEAT\tENDED\tOUTCOME\tNOTICED BY\tERROR", rows)
	}
	if len(j.Rejections) > 0 {
		fmt.Fprintln(o.out, "\nrefused by the fence:")
		rows := make([][]string, len(j.Rejections))
		for i, r := range j.Rejections {
			rows[i] = []string{at(r.At), r.Request, r.Worker, strconv.FormatInt(r.Attempt, 10), orDash(r.Outcome), string(r.Code), oneLine(r.Message, 80)}
		}
		o.table("AT\tREQUEST\tWORKER\tATTEMPT\tOUTCOME\tCODE\tREASON", rows)
	}
}

// ---- stile queues ----

func runQueues(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("queues", "queues [pause|resume QUEUE] --tenant NAME [flags]", true)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	switch verb {
	case "list":
	case "pause", "resume":
		if len(pos) != 1 {
			return &exitError{exitUsage, fmt.Errorf("stile queues %s QUEUE", verb)}
		}
		st, err := ten.PauseQueue(context.Background(), pos[0], verb == "pause")
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(st)
		}
		state := "running"
		if st.Paused {
			state = "paused"
		}
		fmt.Fprintf(o.out, "queue %s: %s\n", st.Queue, state)
		return nil
	default:
		return &exitError{exitUsage, fmt.Errorf("stile queues %s: use pause or resume, or nothing to list", verb)}
	}
	q, err := ten.Queues(context.Background())
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(q)
	}
	states := []string{"available", "running", "scheduled", "retryable", "pending"}
	var rows [][]string
	for _, c := range q.Queues {
		r := []string{c.Queue}
		for _, s := range states {
			r = append(r, strconv.FormatInt(c.Counts[s], 10))
		}
		state := "running"
		if slices.Contains(q.Paused, c.Queue) {
			state = "paused"
		}
		rows = append(rows, append(r, state))
	}
	o.table("QUEUE\tAVAILABLE\tRUNNING\tSCHEDULED\tRETRYABLE\tPENDING\tSTATE", rows)
	fmt.Fprintf(o.out, "finished: %d completed, %d cancelled, %d dead\n", q.Finished["completed"], q.Finished["cancelled"], q.Finished["dead"])
	for _, c := range q.Queues {
		for _, k := range c.Unhandled {
			fmt.Fprintf(o.out, "queue %s: no executor handles kind %s: its ready jobs wait for a handler (the executors that claimed take other kinds)\n", c.Queue, k)
		}
	}
	return nil
}

// ---- stile rates ----

// rateDeleted is what stile rates delete --json prints: the API answers a
// removed key with no body, and a key the module declares with the
// default it went back to.
type rateDeleted struct {
	Key     string    `json:"key"`
	Removed bool      `json:"removed"`
	Rate    *api.Rate `json:"rate,omitempty"`
}

func runRates(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("rates", "rates [set KEY LIMIT PERIOD | delete KEY] --tenant NAME [flags]", true)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	// The arguments are checked before the token is looked for: a typo
	// says what is wrong with it.
	var limit int64
	var period time.Duration
	switch verb {
	case "list":
		if len(pos) > 0 {
			return &exitError{exitUsage, fmt.Errorf("stile rates %s: use set or delete, or nothing to list", pos[0])}
		}
	case "set":
		if len(pos) != 3 {
			return &exitError{exitUsage, errors.New("stile rates set KEY LIMIT PERIOD: e.g. stile rates set api 100 1s (at most 100 starts in any second)")}
		}
		if limit, err = strconv.ParseInt(pos[1], 10, 64); err != nil {
			return &exitError{exitUsage, fmt.Errorf("limit %q is not a whole number of starts", pos[1])}
		}
		if period, err = time.ParseDuration(pos[2]); err != nil || period <= 0 || period%time.Millisecond != 0 {
			return &exitError{exitUsage, fmt.Errorf("period %q is not a duration of whole milliseconds, such as 500ms, 1s, 1m or 1h", pos[2])}
		}
	case "delete":
		if len(pos) != 1 {
			return &exitError{exitUsage, errors.New("stile rates delete KEY")}
		}
	default:
		return &exitError{exitUsage, fmt.Errorf("stile rates %s: use set or delete, or nothing to list", verb)}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch verb {
	case "set":
		r, err := ten.SetRate(ctx, pos[0], limit, period)
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(r)
		}
		fmt.Fprintf(o.out, "rate key %s: %s\n", r.Key, rateLine(r))
		return nil
	case "delete":
		r, removed, err := ten.DeleteRate(ctx, pos[0])
		if err != nil {
			return err
		}
		if *o.asJSON {
			d := rateDeleted{Key: pos[0], Removed: removed}
			if !removed {
				d.Rate = &r
			}
			return o.printJSON(d)
		}
		if removed {
			fmt.Fprintf(o.out, "rate key %s: removed\n", pos[0])
		} else {
			fmt.Fprintf(o.out, "rate key %s: back to %s\n", r.Key, rateLine(r))
		}
		return nil
	}
	rs, err := ten.Rates(ctx)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(api.RatesResponse{Rates: rs})
	}
	rows := make([][]string, len(rs))
	for i, r := range rs {
		rows[i] = []string{r.Key, strconv.FormatInt(r.Limit, 10) + " per " + periodText(r.PeriodMs), r.Source,
			strconv.FormatInt(r.InWindow, 10), when(r.OpenAt), strconv.FormatInt(r.Started, 10), strconv.FormatInt(r.Limited, 10)}
	}
	o.table("KEY\tLIMIT\tSOURCE\tIN WINDOW\tOPENS AT\tSTARTED\tLIMITED", rows)
	return nil
}

// rateLine says a rate limit and whose it is: "2 starts per 1s (the
// tenant's)".
func rateLine(r api.Rate) string {
	starts := "starts"
	if r.Limit == 1 {
		starts = "start"
	}
	return fmt.Sprintf("%d %s per %s (the %s's)", r.Limit, starts, periodText(r.PeriodMs), r.Source)
}

// periodText writes a period of milliseconds as the duration it was set
// with: 500ms, 1s, 1m30s, 1h (not 1h0m0s).
func periodText(ms int64) string {
	s := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ---- stile failing ----

func runFailing(args []string) error {
	o := newOps("failing", "failing [--tenant NAME | --all | --prefix P] [flags]", true)
	all := o.fs.Bool("all", false, "every tenant the token covers, from the directory (the default without --tenant)")
	prefix := o.fs.String("prefix", "", "the tenants whose names start with it, from the directory")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{exitUsage, fmt.Errorf("stile failing takes flags only, not %q", pos[0])}
	}
	if *all || *prefix != "" || *o.tenant == "" {
		return o.fleetFailing(*prefix)
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	f, err := ten.Failing(context.Background())
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(f)
	}
	if len(f.Jobs)+len(f.Reactions)+len(f.Projections) == 0 {
		fmt.Fprintln(o.out, "nothing is failing")
		return nil
	}
	if len(f.Jobs) > 0 {
		rows := make([][]string, len(f.Jobs))
		for i, g := range f.Jobs {
			rows[i] = []string{g.Kind, g.State, strconv.FormatInt(g.Count, 10), at(g.FirstAt), at(g.LastAt), g.LatestJob, oneLine(g.Error, 80)}
		}
		o.table("KIND\tSTATE\tJOBS\tFIRST\tLAST\tLATEST JOB\tERROR", rows)
		if f.Truncated {
			fmt.Fprintf(o.out, "(the newest %d jobs of each state were read)\n", api.MaxFailingScan)
		}
		fmt.Fprintln(o.out, "fix them all: stile jobs retry --where 'state=dead&kind=KIND'; one job's timeline: stile jobs show ID")
	}
	for _, r := range f.Reactions {
		fmt.Fprintf(o.out, "reaction %s: %d failing deliveries from event %d: %s\n", r.Name, r.Failing, r.Seq, oneLine(r.Error, 120))
	}
	for _, p := range f.Projections {
		fmt.Fprintf(o.out, "projection %s: stalled at event %d: %s\n", p.Name, p.ErrorSeq, oneLine(p.Error, 120))
	}
	return nil
}

// fleetFailing prints what is failing across the tenants of prefix.
func (o *ops) fleetFailing(prefix string) error {
	cl, err := o.client()
	if err != nil {
		return err
	}
	f, err := cl.Failing(context.Background(), prefix)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(f)
	}
	if len(f.Groups) == 0 {
		fmt.Fprintln(o.out, "nothing is failing in any tenant")
		return nil
	}
	rows := make([][]string, len(f.Groups))
	for i, g := range f.Groups {
		what := g.What + " " + g.Name
		if g.State != "" {
			what += " (" + g.State + ")"
		}
		var names []string
		for _, t := range g.Tenants {
			names = append(names, t.Tenant+":"+strconv.FormatInt(t.Count, 10))
		}
		ts := strings.Join(names, " ")
		if int64(len(g.Tenants)) < g.TenantCount {
			ts += fmt.Sprintf(" (+%d more)", g.TenantCount-int64(len(g.Tenants)))
		}
		rows[i] = []string{what, strconv.FormatInt(g.Count, 10), strconv.FormatInt(g.TenantCount, 10), when(g.FirstAt), when(g.LastAt), oneLine(g.Error, 60), ts}
	}
	o.table("WHAT\tCOUNT\tTENANTS\tFIRST\tLAST\tERROR\tBY TENANT", rows)
	fmt.Fprintf(o.out, "%d tenants have something failing", f.Tenants)
	if len(f.Partial) > 0 {
		fmt.Fprintf(o.out, "; %s told only their most failing groups (stile failing --tenant NAME has all)", strings.Join(f.Partial, ", "))
	}
	fmt.Fprintln(o.out)
	fmt.Fprintln(o.out, "one tenant: stile failing --tenant NAME; fix a group everywhere: stile jobs retry --all --where 'state=dead&kind=KIND'")
	return nil
}

// ---- stile reactions ----

func runReactions(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("reactions", "reactions [skip HANDLER SEQ --reason WHY | pause HANDLER | resume HANDLER | replay HANDLER --from SEQ] --tenant NAME [flags]", true)
	reason := o.fs.String("reason", "", "skip: why, kept with the delivery (required)")
	from := o.fs.Int64("from", 0, "replay: the seq of the first event to deliver again (required)")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	// The API keeps why a delivery was skipped and refuses a skip without
	// it: say so before asking.
	if verb == "skip" && *reason == "" {
		return &exitError{exitUsage, errors.New(`stile reactions skip HANDLER SEQ --reason WHY: say why the event is skipped (it is kept with the delivery)`)}
	}
	if verb == "replay" && (len(pos) != 1 || *from < 1) {
		return &exitError{exitUsage, errors.New("stile reactions replay HANDLER --from SEQ: name one policy and the seq (1 or more) of the first event to deliver again")}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch verb {
	case "list":
		rs, err := ten.Reactions(ctx)
		if err != nil {
			return err
		}
		if *o.asJSON {
			return o.printJSON(rs)
		}
		var rows [][]string
		for _, r := range rs.Reactions {
			open := make([]string, 0, len(r.Open))
			for _, e := range r.Open {
				open = append(open, fmt.Sprintf("%d(%s)", e.Seq, e.State))
			}
			state := "running"
			if r.Paused {
				state = "paused"
			}
			rows = append(rows, []string{r.Name, r.Kind, state, strconv.FormatInt(r.Checkpoint, 10), strconv.FormatInt(r.Lag, 10), orDash(strings.Join(open, " "))})
		}
		o.table("REACTION\tKIND\tSTATE\tCHECKPOINT\tLAG\tOPEN DELIVERIES", rows)
		fmt.Fprintf(o.out, "log head: %d\n", rs.Head)
		return nil
	case "skip":
		if len(pos) != 2 {
			return &exitError{exitUsage, errors.New("stile reactions skip HANDLER SEQ --reason WHY")}
		}
		seq, err := strconv.ParseInt(pos[1], 10, 64)
		if err != nil {
			return &exitError{exitUsage, fmt.Errorf("seq %q is not a number", pos[1])}
		}
		if err := ten.Skip(ctx, pos[0], seq, *reason); err != nil {
			return err
		}
		fmt.Fprintf(o.out, "skipped event %d for %s\n", seq, pos[0])
		return nil
	case "pause", "resume":
		if len(pos) != 1 {
			return &exitError{exitUsage, fmt.Errorf("stile reactions %s HANDLER", verb)}
		}
		if err := ten.PauseReaction(ctx, pos[0], verb == "pause"); err != nil {
			return err
		}
		if verb == "pause" {
			fmt.Fprintf(o.out, "reaction %s: paused (its events wait; resume with stile reactions resume %s)\n", pos[0], pos[0])
		} else {
			fmt.Fprintf(o.out, "reaction %s: running\n", pos[0])
		}
		return nil
	case "replay":
		return o.replay(ctx, ten, pos[0], *from)
	}
	return &exitError{exitUsage, fmt.Errorf("stile reactions %s: use skip, pause, resume, replay, or nothing to list", verb)}
}

// ---- stile projections ----

func runProjections(args []string) error {
	verb, args := splitVerb(args)
	o := newOps("projections", "projections [rebuild NAME] --tenant NAME [flags]", true)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var ps api.ProjectionsResponse
	switch verb {
	case "list":
		ps, err = ten.Projections(ctx)
	case "rebuild":
		if len(pos) != 1 {
			return &exitError{exitUsage, errors.New("stile projections rebuild NAME")}
		}
		ps, err = ten.Rebuild(ctx, pos[0])
	default:
		return &exitError{exitUsage, fmt.Errorf("stile projections %s: use rebuild, or nothing to list", verb)}
	}
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(ps)
	}
	var rows [][]string
	for _, p := range ps.Projections {
		for _, g := range []struct {
			role string
			g    *api.GenerationStatus
		}{{"live", p.Live}, {"rebuild", p.Rebuild}} {
			if g.g == nil {
				continue
			}
			errText := "-"
			if g.g.Error != "" {
				errText = fmt.Sprintf("at event %d: %s", g.g.ErrorSeq, oneLine(g.g.Error, 60))
			}
			rows = append(rows, []string{p.Name, g.role, strconv.FormatInt(g.g.Generation, 10), g.g.Status,
				strconv.FormatInt(g.g.Checkpoint, 10), strconv.FormatInt(g.g.Lag, 10), errText})
		}
	}
	o.table("PROJECTION\tGENERATION\t#\tSTATUS\tCHECKPOINT\tLAG\tERROR", rows)
	return nil
}

// ---- stile query ----

func runQuery(args []string) error {
	o := newOps("query", "query NAME [param=value ...] --tenant NAME [--min-seq SEQ --wait 10s] [flags]", true)
	minSeq := o.fs.Int64("min-seq", 0, "answer once the query's projection applied every event of its types up to this seq")
	wait := o.fs.Duration("wait", 10*time.Second, "with --min-seq, how long to wait for the projection")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &exitError{exitUsage, errors.New("stile query NAME [param=value ...]: name a registered query")}
	}
	params := url.Values{}
	for _, kv := range pos[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &exitError{exitUsage, fmt.Errorf("stile query: %q is not param=value", kv)}
		}
		params.Add(k, v)
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	var res api.QueryResult
	if *minSeq > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), *wait)
		defer cancel()
		res, err = ten.QueryAtLeast(ctx, pos[0], params, *minSeq)
	} else {
		res, err = ten.Query(context.Background(), pos[0], params)
	}
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(res)
	}
	for _, r := range res.Rows {
		fmt.Fprintln(o.out, string(r))
	}
	fmt.Fprintf(o.out, "(%d rows%s) %s\n", len(res.Rows), map[bool]string{true: ", truncated"}[res.Truncated], freshness(res.Projection))
	return nil
}

// freshness says in a line how far a query's projection had applied the
// log.
func freshness(p *api.QueryProjection) string {
	switch {
	case p == nil:
		return ""
	case p.Status == "stalled":
		return fmt.Sprintf("projection %s is STALLED at event %d since checkpoint %d: %s (retries at %s): rows may be stale",
			p.Name, p.ErrorSeq, p.Checkpoint, oneLine(p.Error, 80), when(p.RetryAt))
	case p.Status == "catching_up":
		return fmt.Sprintf("projection %s is catching up: applied up to %d, event %d and later not yet", p.Name, p.Checkpoint, p.PendingFrom)
	}
	return fmt.Sprintf("projection %s is current at %d", p.Name, p.Checkpoint)
}

// ---- stile events ----

func runEvents(args []string) error {
	o := newOps("events", "events --tenant NAME [--stream S | --after SEQ --types a,b] [flags]", true)
	stream := o.fs.String("stream", "", "one stream's events, by version")
	after := o.fs.Int64("after", 0, "events after this seq")
	types := o.fs.String("types", "", "comma-separated event types")
	limit := o.fs.Int("limit", 100, "at most this many")
	if _, err := o.parse(args); err != nil {
		return err
	}
	if *stream != "" && (*after != 0 || *types != "") {
		// A stream is read by version from its start: --after and
		// --types filter the log, and were dropped without a word.
		return &exitError{exitUsage, errors.New("--stream reads one stream from its first event: --after and --types read the log")}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var es api.EventsResponse
	if *stream != "" {
		es, err = ten.Stream(ctx, *stream, 0, *limit)
	} else {
		var ts []string
		if *types != "" {
			ts = strings.Split(*types, ",")
		}
		es, err = ten.Events(ctx, *after, *limit, ts...)
	}
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(es)
	}
	rows := make([][]string, len(es.Events))
	for i, e := range es.Events {
		rows[i] = []string{strconv.FormatInt(e.Seq, 10), e.Stream, strconv.FormatInt(e.Version, 10), e.Type, at(e.At), oneLine(string(e.Data), 80)}
	}
	o.table("SEQ\tSTREAM\tVERSION\tTYPE\tAT\tDATA", rows)
	return nil
}

// ---- stile tenants ----

func runTenants(args []string) error {
	if verb, rest := splitVerb(args); verb == "create" {
		return runTenantsCreate(rest)
	}
	o := newOps("tenants", "tenants [--ready] [flags] | tenants create NAME... [flags]", false)
	ready := o.fs.Bool("ready", false, "only tenants with ready work")
	if _, err := o.parse(args); err != nil {
		return err
	}
	all, err := o.allTenants(*ready)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(all)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	rows := make([][]string, len(all))
	for i, t := range all {
		rows[i] = []string{t.Name, at(t.FirstSeen), at(t.LastSeen), orDash(t.Module), strconv.FormatInt(t.Schema, 10),
			strconv.FormatInt(t.Version, 10), strconv.FormatBool(t.Ready), orDash(oneLine(t.Failed, 80))}
	}
	o.table("TENANT\tFIRST SEEN\tLAST SEEN\tMODULE\tSTILE SCHEMA\tMODULE SCHEMA\tREADY\tFAILED", rows)
	return nil
}

// allTenants reads every page of the directory (ready: only tenants with
// ready work).
func (o *ops) allTenants(ready bool) ([]api.TenantInfo, error) {
	cl, err := o.client()
	if err != nil {
		return nil, err
	}
	var all []api.TenantInfo
	for after := ""; ; {
		page, err := cl.Tenants(context.Background(), api.TenantsQuery{After: after, Limit: api.MaxTenantsPage, Ready: ready})
		if err != nil {
			return nil, err
		}
		all = append(all, page.Tenants...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

// runTenantsCreate creates tenants (PUT /v1/t/{tenant}); one that exists
// already is left as it is.
func runTenantsCreate(args []string) error {
	o := newOps("tenants create", "tenants create NAME... [flags]", false)
	names, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		o.fs.Usage()
		return errors.New("name the tenants to create: stile tenants create acme [globex …]")
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	var out []api.TenantCreated
	for _, name := range names {
		if !api.ValidTenant(name) {
			return fmt.Errorf("tenant %q: %s", name, api.InvalidTenant.Message)
		}
		c, err := cl.Tenant(name).Create(context.Background())
		if err != nil {
			return fmt.Errorf("create tenant %s: %w", name, err)
		}
		out = append(out, c)
	}
	if *o.asJSON {
		return o.printJSON(out)
	}
	for _, c := range out {
		if c.Created {
			fmt.Fprintf(o.out, "created tenant %s\n", c.Tenant)
		} else {
			fmt.Fprintf(o.out, "tenant %s exists already\n", c.Tenant)
		}
	}
	return nil
}

// ---- stile migrate ----

// runMigrate applies pending migrations (and tries failed ones again) in
// one tenant or every tenant of the directory, one line per tenant as it
// goes; it exits 1 when any tenant's migration failed.
func runMigrate(args []string) error {
	o := newOps("migrate", "migrate [--tenant NAME] [flags]", true)
	if _, err := o.parse(args); err != nil {
		return err
	}
	cl, err := o.client()
	if err != nil {
		return err
	}
	names := []string{*o.tenant}
	if *o.tenant == "" {
		all, err := o.allTenants(false)
		if err != nil {
			return err
		}
		names = names[:0]
		for _, ti := range all {
			names = append(names, ti.Name)
		}
	}
	var results []api.Status
	failed := 0
	for i, name := range names {
		st, err := cl.Tenant(name).Migrate(context.Background())
		if err != nil {
			if *o.tenant != "" {
				return err
			}
			failed++
			fmt.Fprintf(o.out, "[%d/%d] %s: %v\n", i+1, len(names), name, err)
			continue
		}
		results = append(results, st)
		if st.StileSchema.Failed != nil || st.ModuleSchema.Failed != nil {
			failed++
		}
		if !*o.asJSON {
			fmt.Fprintf(o.out, "[%d/%d] %s: %s\n", i+1, len(names), name, migrateLine(st))
		}
	}
	if *o.asJSON {
		if err := o.printJSON(results); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &exitError{exitFailed, fmt.Errorf("%d of %d tenants did not migrate", failed, len(names))}
	}
	return nil
}

// migrateLine says how a tenant's migrations went.
func migrateLine(st api.Status) string {
	part := func(what string, s api.SchemaState) string {
		line := fmt.Sprintf("%s %d/%d", what, s.Version, s.Known)
		if s.Applied > 0 {
			line += fmt.Sprintf(" (applied %d)", s.Applied)
		}
		if f := s.Failed; f != nil {
			line += fmt.Sprintf(" FAILED %d_%s (attempt %d): %s", f.Version, f.Name, f.Attempts, oneLine(f.Error, 120))
		}
		if len(s.Ahead) > 0 {
			line += fmt.Sprintf(" (%d ahead of this module)", len(s.Ahead))
		}
		return line
	}
	return part("stile", st.StileSchema) + ", " + part("module", st.ModuleSchema)
}

// ---- stile export / import ----

// runExport writes a tenant's export, one page (a JSON object) per line.
func runExport(args []string) error {
	o := newOps("export", "export --tenant NAME [--out FILE] [flags]", true)
	outPath := o.fs.String("out", "", "write the pages to this file, one JSON object a line (default: standard output)")
	if _, err := o.parse(args); err != nil {
		return err
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	w := o.out
	if *outPath != "" {
		f, err := os.Create(*outPath)
		if err != nil {
			return &exitError{exitUsage, err}
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	pages, rows := 0, 0
	cursor := ""
	for {
		p, err := ten.ExportPage(context.Background(), cursor, 0)
		if err != nil {
			return err
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		bw.Write(append(b, '\n'))
		pages++
		for _, tb := range p.Tables {
			var rs []json.RawMessage
			_ = json.Unmarshal(tb.Rows, &rs)
			rows += len(rs)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "exported tenant %s: %d pages, %d rows\n", *o.tenant, pages, rows)
	return nil
}

// runImport posts the pages stile export wrote, in order, into an empty
// tenant.
func runImport(args []string) error {
	o := newOps("import", "import --tenant NAME [--in FILE | --abort] [flags]", true)
	inPath := o.fs.String("in", "", "read the pages from this file (default: standard input)")
	abort := o.fs.Bool("abort", false, "abandon the import under way: empty what its pages wrote, and free the tenant")
	if _, err := o.parse(args); err != nil {
		return err
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	if *abort {
		res, err := ten.AbortImport(context.Background())
		if err != nil {
			return err
		}
		fmt.Fprintf(o.out, "aborted the import of tenant %s: emptied %s\n", res.Tenant, strings.Join(res.Tables, ", "))
		return nil
	}
	var r io.Reader = os.Stdin
	if *inPath != "" {
		f, err := os.Open(*inPath)
		if err != nil {
			return &exitError{exitUsage, err}
		}
		defer f.Close()
		r = f
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), api.MaxBodyBytes+1)
	pages, rows := 0, 0
	done := false
	for sc.Scan() {
		var p api.ExportPage
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return &exitError{exitUsage, fmt.Errorf("line %d is not an export page: %w", pages+1, err)}
		}
		res, err := ten.Import(context.Background(), p)
		if err != nil {
			if pages > 0 {
				return fmt.Errorf("page %d: %w (the import holds tenant %s until it ends: import the pages again from this one, or stile import --abort --tenant %s)", pages+1, err, *o.tenant, *o.tenant)
			}
			return fmt.Errorf("page %d: %w", pages+1, err)
		}
		pages++
		rows += res.Rows
		done = res.Done
		fmt.Fprintf(os.Stderr, "[%d] %d rows\n", pages, res.Rows)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !done {
		return &exitError{exitFailed, fmt.Errorf("the pages ended before the export's last: the import of tenant %s is incomplete", *o.tenant)}
	}
	fmt.Fprintf(o.out, "imported tenant %s: %d pages, %d rows\n", *o.tenant, pages, rows)
	return nil
}
