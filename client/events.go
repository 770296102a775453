package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
)

// Append appends events to a stream. With r.ExpectedVersion set, a stream
// at another version answers 409 version_conflict (api.Error.CurrentVersion).
func (t *Tenant) Append(ctx context.Context, stream string, r api.AppendRequest) (api.AppendResponse, error) {
	var out api.AppendResponse
	err := t.do(ctx, api.RouteAppend, nil, r, &out, stream)
	return out, err
}

// Events reads up to limit events (0: the server's default, 100) after
// seq after, optionally of some types only.
func (t *Tenant) Events(ctx context.Context, after int64, limit int, types ...string) (api.EventsResponse, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	setLimit(q, limit)
	if len(types) > 0 {
		q.Set("types", strings.Join(types, ","))
	}
	var out api.EventsResponse
	err := t.do(ctx, api.RouteEvents, q, nil, &out)
	return out, err
}

// Stream reads up to limit events (0: the server's default) of a stream
// from version from on.
func (t *Tenant) Stream(ctx context.Context, stream string, from int64, limit int) (api.EventsResponse, error) {
	q := url.Values{"from_version": {strconv.FormatInt(from, 10)}}
	setLimit(q, limit)
	var out api.EventsResponse
	err := t.do(ctx, api.RouteReadStream, q, nil, &out, stream)
	return out, err
}

// Command applies a command; an id applied before answers what it did
// then, with Duplicate set.
func (t *Tenant) Command(ctx context.Context, c api.Command) (api.CommandResult, error) {
	var out api.CommandResult
	err := t.do(ctx, api.RouteCommand, nil, c, &out)
	return out, err
}

// GetCommand reads what an applied command did.
func (t *Tenant) GetCommand(ctx context.Context, id string) (api.CommandResult, error) {
	var out api.CommandResult
	err := t.do(ctx, api.RouteGetCommand, nil, nil, &out, id)
	return out, err
}

// ClaimReactions claims deliveries of events to the module's reactions.
func (t *Tenant) ClaimReactions(ctx context.Context, r api.ReactionClaimRequest) (api.ReactionClaimResponse, error) {
	var out api.ReactionClaimResponse
	err := t.do(ctx, api.RouteClaimEvents, nil, r, answer[api.ReactionClaimResponse]{&out, api.DecodeReactionClaimResponse})
	return out, err
}

// Settle settles deliveries; each result says how its settlement went
// (Error set when it was refused).
func (t *Tenant) Settle(ctx context.Context, ss ...api.Settlement) ([]api.SettleResult, error) {
	var out api.SettleResponse
	err := t.do(ctx, api.RouteSettle, nil, api.SettleRequest{Settlements: ss}, answer[api.SettleResponse]{&out, api.DecodeSettleResponse})
	return out.Results, err
}

// Reactions reads the status of the module's reactions.
func (t *Tenant) Reactions(ctx context.Context) (api.ReactionsResponse, error) {
	var out api.ReactionsResponse
	err := t.do(ctx, api.RouteReactions, nil, nil, &out)
	return out, err
}

// Skip skips the event a reaction is stuck on, with the reason.
func (t *Tenant) Skip(ctx context.Context, handler string, seq int64, reason string) error {
	return t.do(ctx, api.RouteSkip, nil, api.SkipRequest{Seq: seq, Reason: reason}, nil, handler)
}

// Projections reads the status of the module's projections.
func (t *Tenant) Projections(ctx context.Context) (api.ProjectionsResponse, error) {
	var out api.ProjectionsResponse
	err := t.do(ctx, api.RouteProjections, nil, nil, &out)
	return out, err
}

// Rebuild starts rebuilding a projection into a new generation; reads
// keep the current one until the new one reaches the head.
func (t *Tenant) Rebuild(ctx context.Context, projection string) (api.ProjectionsResponse, error) {
	var out api.ProjectionsResponse
	err := t.do(ctx, api.RouteRebuild, nil, nil, &out, projection)
	return out, err
}

// Query runs a registered query with its parameters.
func (t *Tenant) Query(ctx context.Context, name string, params url.Values) (api.QueryResult, error) {
	var out api.QueryResult
	err := t.do(ctx, api.RouteQuery, params, nil, &out, name)
	return out, err
}

// QueryAtLeast runs a registered query once its projection has applied
// every event of its types up to seq (an append's LastSeq, or the seq of a
// command's last event): read-your-writes for a projection. The tenant answers 409
// projection_behind while the projection is short of it; QueryAtLeast asks
// again, from 5 ms doubling to 250 ms between tries, until it answers or
// ctx ends (bound the wait with ctx). A stalled projection may never get
// there: the last refusal, which says where it stalled and why, is
// returned with ctx's error.
func (t *Tenant) QueryAtLeast(ctx context.Context, name string, params url.Values, seq int64) (api.QueryResult, error) {
	q := url.Values{}
	for k, v := range params {
		q[k] = v
	}
	q.Set(api.MinSeqParam, strconv.FormatInt(seq, 10))
	pause := 5 * time.Millisecond
	var refused error // the last projection_behind
	for {
		out, err := t.Query(ctx, name, q)
		if Code(err) != api.CodeProjectionBehind {
			if err != nil && refused != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), refused)
			}
			return out, err
		}
		refused = err
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return out, fmt.Errorf("%w (%w)", ctx.Err(), refused)
		case <-timer.C:
		}
		pause = min(2*pause, 250*time.Millisecond)
	}
}

// setLimit sets the limit parameter, unless limit is 0 (the default).
func setLimit(q url.Values, limit int) {
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
}
