package bench

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

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
	Read, Written float64 // per operation
}

// RowsPerOperation runs each operation n times against the tenant d
// drives, counting with c (d's transport), and returns its rows per
// operation: the job cycle one per request and batched, an event
// appended, a reaction's delivery claimed and settled, and a command on
// an aggregate with no history and with history events. Projections are
// not in it: they catch up in the alarm, which answers no request.
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
	return out, nil
}

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
