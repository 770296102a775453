package runtime

import (
	"errors"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// A replay (POST /operations, action "replay") hands a policy every event
// of its types from from_seq up to its checkpoint again, in event order,
// as new deliveries: each slice opens the next deliveries again (with new
// claim ids, so a settlement of an earlier claim is refused), and while it
// runs claims hand out none of the policy's deliveries past the replay's
// position and no new event. Deliveries in flight when a slice would open
// earlier ones first settle or run out of lease: the reaction never runs
// two claims at once.

// replayWait is how long a replay waiting for a delivery in flight waits
// before it looks again (at most: the lease may end sooner).
const replayWait = 1000

func (t *Tenant) startReplay(r api.OperationRequest) (route, *api.Error) {
	rc, ok := t.app.reactionBy[r.Reaction]
	switch {
	case r.Reaction == "":
		return nil, api.Refuse(api.CodeInvalidRequest, "missing field \"reaction\": the policy to replay")
	case !ok:
		return nil, api.Refuse(api.CodeNotFound, "no reaction %q: this module registers %s", r.Reaction, t.app.reactionNames())
	case rc.h.Kind == api.ReactionKindProcess:
		return nil, api.Refuse(api.CodeInvalidRequest, "reaction %q is a process: its state already holds what its events did, so only a policy can be replayed", r.Reaction)
	case r.Filter != "":
		return nil, api.Refuse(api.CodeInvalidRequest, "a replay takes no filter: it replays every event of the reaction's types from from_seq")
	case r.FromSeq < 1:
		return nil, api.Refuse(api.CodeInvalidRequest, "from_seq %d is out of range: the first event to replay, 1 or more", r.FromSeq)
	}
	return func(now int64) (result, error) {
		head, err := t.events.Head()
		if err != nil {
			return result{}, err
		}
		if r.FromSeq > head {
			return result{}, api.Refuse(api.CodeInvalidRequest, "from_seq %d is beyond the log's head (%d)", r.FromSeq, head)
		}
		replaying, err := t.reactions.Replaying()
		if err != nil {
			return result{}, err
		}
		if _, busy := replaying[r.Reaction]; busy {
			return result{}, api.Refuse(api.CodeReplayUnderWay, "reaction %q is being replayed already: %s", r.Reaction, t.replayOf(r.Reaction))
		}
		until, err := t.reactions.Checkpoint(r.Reaction)
		if err != nil {
			return result{}, err
		}
		o, err := t.store.StartReplay(now, r.Reaction, r.FromSeq, until)
		if err != nil {
			return result{}, err
		}
		if err := t.reactions.HoldForReplay(now, r.Reaction, r.FromSeq-1); err != nil {
			return result{}, err
		}
		return result{status: statusAccepted, body: operationView(o).AppendJSON}, nil
	}, nil
}

// replayOf names the running replay of reaction, for a refusal.
func (t *Tenant) replayOf(reaction string) string {
	ops, err := t.store.RunningOperations(100)
	if err == nil {
		for _, o := range ops {
			if o.Action == "replay" && o.Reaction == reaction {
				return printf.Sprintf("operation %d (GET /operations/%d follows it)", o.ID, o.ID)
			}
		}
	}
	return "its operation is running"
}

// replaySlice opens the next deliveries of o's reaction again, or waits
// for the reaction's deliveries in flight past its position.
func (t *Tenant) replaySlice(now int64, o fencestore.Operation) error {
	rc, ok := t.app.reactionBy[o.Reaction]
	if !ok { // registered when started: only a changed module gets here
		if err := t.reactions.MoveReplay(now, o.Reaction, o.AfterID, 0, true); err != nil && !errors.Is(err, do.ErrGuard) {
			return err
		}
		return t.store.AdvanceOperation(now, o, o.AfterID, 0, 0, 0, printf.Sprintf("reaction %s is no longer registered", o.Reaction), true)
	}
	held, err := t.reactions.InFlightAfter(now, o.Reaction, o.AfterID)
	if err != nil {
		return err
	}
	if held != 0 {
		return t.store.DeferOperation(o, min(held, now+replayWait))
	}
	r, err := t.reactions.Reopen(now, rc.h, o.AfterID, o.UntilSeq, operationSlice)
	if err != nil {
		return printf.Errorf("replay %s from %d: %w", o.Reaction, o.AfterID+1, err)
	}
	after, finished := replayStep(o.AfterID, o.UntilSeq, r.Last, r.More)
	if err := t.reactions.MoveReplay(now, o.Reaction, o.AfterID, after, finished); err != nil {
		return err
	}
	lastSkip := ""
	if r.FirstOpen != 0 {
		lastSkip = printf.Sprintf("event %d: its delivery was still open, so it is delivered once, not twice", r.FirstOpen)
	}
	return t.store.AdvanceOperation(now, o, after, r.Found, r.Reopened, r.Found-r.Reopened, lastSkip, finished)
}

// replayStep is where a replay at after goes next, having found events up
// to last (0: none) and more possibly following: past last, or to until
// and done.
func replayStep(after, until, last int64, more bool) (int64, bool) {
	if more && last > after && last < until {
		return last, false
	}
	return max(after, until), true
}
