package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
)

// Rows are the storage rows some requests read and wrote, as the answers
// said (api.HeaderRowsRead, api.HeaderRowsWritten).
type Rows struct {
	Requests      int
	Read, Written int64
}

// RowCounter is an http.RoundTripper that adds up the rows each answer
// says its request read and wrote. Only the Worker sends them: an answer
// without them (stile dev, or an answer the Worker gave before reaching
// the tenant's object) makes Take fail, so no figure is a silent zero.
type RowCounter struct {
	Base http.RoundTripper

	mu      sync.Mutex
	rows    Rows
	missing string // the first answer that said nothing, if any
}

// RoundTrip implements http.RoundTripper.
func (c *RowCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.Base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	read, rerr := strconv.ParseInt(resp.Header.Get(api.HeaderRowsRead), 10, 64)
	written, werr := strconv.ParseInt(resp.Header.Get(api.HeaderRowsWritten), 10, 64)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rerr != nil || werr != nil {
		if c.missing == "" {
			c.missing = fmt.Sprintf("%s %s answered %d without %s and %s", req.Method, req.URL.Path, resp.StatusCode,
				api.HeaderRowsRead, api.HeaderRowsWritten)
		}
		return resp, nil
	}
	c.rows.Requests++
	c.rows.Read += read
	c.rows.Written += written
	return resp, nil
}

// Take returns the rows counted since the last Take and starts again.
func (c *RowCounter) Take() (Rows, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rows, missing := c.rows, c.missing
	c.rows, c.missing = Rows{}, ""
	if missing != "" {
		return rows, fmt.Errorf("count rows: %s (only a tenant's Durable Object counts them)", missing)
	}
	return rows, nil
}

// RowFigure is what one operation costs in rows, on average over Ops.
type RowFigure struct {
	Op            string
	Ops           int
	Requests      int
	Alarms        int     // the alarms counted, for an operation done in them
	Read, Written float64 // per operation
}

// RowsPerOperation runs each operation n times against the tenant d
// drives, counting with c (d's transport), and returns its rows per
// operation: the job cycle one per request and batched, an event
// appended, a reaction's delivery claimed and settled, a command on an
// aggregate with no history and with history events, and an event applied
// by the default module's projection (event_counts) in batches of one and
// of up to 100. A projection catches up in the alarm, which answers no
// request: its rows are the tenant's usage (GET /usage, which counts the
// alarms' rows) less those of the requests made meanwhile
// (projectionBatches).
func RowsPerOperation(ctx context.Context, d Driver, c *RowCounter, n, history int) ([]RowFigure, error) {
	var out []RowFigure
	measure := func(op string, ops int, run func() error) error {
		if _, err := c.Take(); err != nil { // what came before is not this operation's
			return err
		}
		if err := run(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		rows, err := c.Take()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		out = append(out, RowFigure{Op: op, Ops: ops, Requests: rows.Requests,
			Read: float64(rows.Read) / float64(ops), Written: float64(rows.Written) / float64(ops)})
		return nil
	}
	cycle := func(batch int) func() error {
		return func() error { _, err := Cycle(ctx, d, n, batch); return err }
	}
	appendEvents := func(batch int) func() error {
		return func() error { _, err := Append(ctx, d, n, batch); return err }
	}
	settle := func(batch int) func() error {
		return func() error { _, err := settleAppended(ctx, d, n, batch); return err }
	}
	steps := []struct {
		op  string
		run func() error
	}{
		{"job cycle, one job per request", cycle(1)},
		{"job cycle, 10 jobs per request", cycle(10)},
		{"job cycle, 100 jobs per request", cycle(100)},
		{"event appended, one per request", appendEvents(1)},
		{"event appended, 10 per request", appendEvents(10)},
		{"reaction delivery claimed and settled, one per request", settle(1)},
		{"reaction delivery claimed and settled, 10 per request", settle(10)},
	}
	// One of each first: the tenant's creation and each part's first use
	// (a reaction's checkpoint, a projection's tables) are not what an
	// operation costs.
	if _, err := Cycle(ctx, d, 1, 1); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	if err := increment(ctx, d, "rows-warm-up", 0, 1); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	// The log policy has the increment's event too: both are settled here.
	if _, err := Append(ctx, d, 1, 1); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	if _, err := settleAppended(ctx, d, 2, 2); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	// The alarm that applies the warm-up's events to the projection is not
	// the first operation's either (on a host that counts no rows there is
	// nothing to wait for).
	if _, err := c.Take(); err != nil {
		return nil, err
	}
	if err := caughtUp(ctx, d, Projection, 0); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}
	// The projection's batches go first, right after the warm-up recorded
	// the tenant's usage: a busy tenant's alarms record it at most once in
	// 30 s, and one record in their alarms would add a row to the figure.
	// They are printed last.
	var batches []RowFigure
	for _, batch := range []int{1, api.MaxAppendEvents} {
		op := "projection batch of one event, per event"
		if batch > 1 {
			op = fmt.Sprintf("projection batch of %d events, per event", batch)
		}
		f, err := projectionBatches(ctx, d, c, n, batch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		f.Op = op
		batches = append(batches, f)
	}
	for _, s := range steps {
		if err := measure(s.op, n, s.run); err != nil {
			return nil, err
		}
	}
	// The settles took the deliveries of the notes appended above (the log
	// policy has one for each), n each.
	for _, before := range []int{0, history} {
		id := fmt.Sprintf("rows-%d", before)
		if err := increment(ctx, d, id, 0, before); err != nil {
			return nil, err
		}
		op := fmt.Sprintf("command on an aggregate of %d to %d events", before, before+n-1)
		if err := measure(op, n, func() error { return increment(ctx, d, id, before, n) }); err != nil {
			return nil, err
		}
	}
	out = append(out, batches...)
	return out, nil
}

// Projection is the default module's projection: it counts the events of
// each stream, "note" events among them.
const Projection = "event_counts"

// projectionBatches appends n "note" events, batch per request, and waits
// after each append until Projection has applied it: one alarm applies
// each batch. It returns the rows of what ran besides the requests, per
// event: the tenant's usage grew by the requests' rows (counted by c) and
// the alarms' (counted by the host into the usage), so the difference is
// the alarms'. It fails unless the usage counted exactly the requests c
// saw and at least one alarm per batch, so that no figure is a silent
// zero or takes in another client's requests.
func projectionBatches(ctx context.Context, d Driver, c *RowCounter, n, batch int) (RowFigure, error) {
	// What the operations before left to apply is not this one's.
	if err := caughtUp(ctx, d, Projection, 0); err != nil {
		return RowFigure{}, err
	}
	if _, err := c.Take(); err != nil {
		return RowFigure{}, err
	}
	var before api.UsageResponse
	if err := call(ctx, d, api.RouteUsage, nil, &before, 200); err != nil {
		return RowFigure{}, err
	}
	batches := 0
	for done := 0; done < n; done += batch {
		evs := make([]api.NewEvent, min(batch, n-done))
		for i := range evs {
			evs[i] = note
		}
		var appended api.AppendResponse
		if err := call(ctx, d, api.RouteAppend, api.AppendRequest{Events: evs}, &appended, 201, "bench"); err != nil {
			return RowFigure{}, err
		}
		batches++
		if err := caughtUp(ctx, d, Projection, appended.LastSeq); err != nil {
			return RowFigure{}, err
		}
	}
	requests, err := c.Take()
	if err != nil {
		return RowFigure{}, err
	}
	var after api.UsageResponse
	if err := call(ctx, d, api.RouteUsage, nil, &after, 200); err != nil {
		return RowFigure{}, err
	}
	// Both answers' days from the first answer's today on: a UTC day that
	// ends meanwhile is counted whole on both sides.
	grew := usageFrom(after, before.To)
	was := usageFrom(before, before.To)
	alarms := grew.Alarms - was.Alarms
	if got := grew.Requests - was.Requests; got != int64(requests.Requests) {
		return RowFigure{}, fmt.Errorf("the usage counted %d requests where %d were made: another client used the tenant, "+
			"or the host does not count its usage", got, requests.Requests)
	}
	if alarms < int64(batches) {
		return RowFigure{}, fmt.Errorf("the usage counted %d alarms for %d batches applied: the host does not count its alarms", alarms, batches)
	}
	read := grew.RowsRead - was.RowsRead - requests.Read
	written := grew.RowsWritten - was.RowsWritten - requests.Written
	if read <= 0 || written <= 0 {
		return RowFigure{}, fmt.Errorf("the alarms that applied %d events read %d rows and wrote %d: the host does not count an alarm's rows",
			n, read, written)
	}
	return RowFigure{Ops: n, Alarms: int(alarms), Read: float64(read) / float64(n), Written: float64(written) / float64(n)}, nil
}

// usageFrom adds up the days of u from day on.
func usageFrom(u api.UsageResponse, day string) api.Usage {
	var sum api.Usage
	for _, d := range u.Days {
		if d.Day >= day {
			sum.Requests += d.Requests
			sum.Alarms += d.Alarms
			sum.RowsRead += d.RowsRead
			sum.RowsWritten += d.RowsWritten
		}
	}
	return sum
}

// caughtUp polls GET /projections until projection's live generation has
// applied every event of its types in the log, seq among them: at most
// catchUpWait, far more than an alarm takes.
func caughtUp(ctx context.Context, d Driver, projection string, seq int64) error {
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	for {
		var st api.ProjectionsResponse
		if err := call(ctx, d, api.RouteProjections, nil, &st, 200); err != nil {
			return err
		}
		i := slices.IndexFunc(st.Projections, func(p api.ProjectionStatus) bool { return p.Name == projection && p.Live != nil })
		if i < 0 {
			return fmt.Errorf("the module has no live projection %s", projection)
		}
		switch live := st.Projections[i].Live; {
		case live.Status == "stalled":
			return fmt.Errorf("projection %s stalled: %s", projection, live.Error)
		case live.Status == "current" && live.Checkpoint >= seq:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("projection %s did not catch up with event %d: %w", projection, seq, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

const catchUpWait = 30 * time.Second

// increment sends n Increment commands to the default module's counter id,
// numbered from first (a command id is applied once).
func increment(ctx context.Context, d Driver, id string, first, n int) error {
	for i := first; i < first+n; i++ {
		cmd := api.Command{ID: fmt.Sprintf("%s-%d", id, i), Aggregate: "counter", AggregateID: id, Type: "Increment"}
		if err := call(ctx, d, api.RouteCommand, cmd, nil, 201); err != nil {
			return err
		}
	}
	return nil
}
