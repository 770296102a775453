package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/stile-run/stile/api"
)

// Policy is the default module's policy the reaction measurement settles:
// it handles "note" events.
const Policy = "log"

var note = api.NewEvent{Type: "note", Data: json.RawMessage(`{"n":1}`)}

// Append appends n "note" events, batch per request, to one stream, and
// returns the elapsed time.
func Append(ctx context.Context, d Driver, n, batch int) (time.Duration, error) {
	start := time.Now()
	for done := 0; done < n; done += batch {
		evs := make([]api.NewEvent, min(batch, n-done))
		for i := range evs {
			evs[i] = note
		}
		if err := call(ctx, d, api.RouteAppend, api.AppendRequest{Events: evs}, nil, 201, "bench"); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// Settle appends n "note" events, then claims and settles their deliveries
// to Policy, batch per claim and per settle request (1: two requests per
// event), and returns the time the claims and settlements took.
func Settle(ctx context.Context, d Driver, n, batch int) (time.Duration, error) {
	if _, err := Append(ctx, d, n, api.MaxAppendEvents); err != nil {
		return 0, err
	}
	return settleAppended(ctx, d, n, batch)
}

// settleAppended claims and settles n deliveries to Policy, batch per
// claim and per settle request, and returns the time it took.
func settleAppended(ctx context.Context, d Driver, n, batch int) (time.Duration, error) {
	start := time.Now()
	for done := 0; done < n; {
		var claimed api.ReactionClaimResponse
		req := api.ReactionClaimRequest{Worker: "bench", Handlers: []string{Policy}, Limit: min(batch, n-done)}
		if err := call(ctx, d, api.RouteClaimEvents, req, &claimed, 200); err != nil {
			return 0, err
		}
		if len(claimed.Deliveries) == 0 {
			return 0, fmt.Errorf("no deliveries after %d of %d", done, n)
		}
		ss := make([]api.Settlement, len(claimed.Deliveries))
		for i, dl := range claimed.Deliveries {
			ss[i] = api.Settlement{Handler: dl.Handler, Seq: dl.Event.Seq, ClaimID: dl.ClaimID, Outcome: api.OutcomeSucceeded}
		}
		var res api.SettleResponse
		if err := call(ctx, d, api.RouteSettle, api.SettleRequest{Settlements: ss}, &res, 200); err != nil {
			return 0, err
		}
		for _, r := range res.Results {
			if r.Error != nil {
				return 0, fmt.Errorf("settle %d: %s", r.Seq, r.Error.Message)
			}
		}
		done += len(ss)
	}
	return time.Since(start), nil
}

// CommandLatencies appends history "Incremented" events to the default
// module's counter id (its stream, counter:<id>), then sends n Increment
// commands to it one at a time and returns their latencies, sorted: what a
// command costs as its aggregate's history grows.
func CommandLatencies(ctx context.Context, d Driver, id string, history, n int) ([]time.Duration, error) {
	stream := "counter:" + id
	for done := 0; done < history; done += api.MaxAppendEvents {
		evs := make([]api.NewEvent, min(api.MaxAppendEvents, history-done))
		for i := range evs {
			evs[i] = api.NewEvent{Type: "Incremented"}
		}
		if err := call(ctx, d, api.RouteAppend, api.AppendRequest{Events: evs}, nil, 201, stream); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, n)
	for i := range out {
		cmd := api.Command{ID: fmt.Sprintf("%s-%d", id, i), Aggregate: "counter", AggregateID: id, Type: "Increment"}
		start := time.Now()
		if err := call(ctx, d, api.RouteCommand, cmd, nil, 201); err != nil {
			return nil, err
		}
		out[i] = time.Since(start)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
