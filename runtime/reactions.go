package runtime

import (
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/inboxstore"
)

// Reaction defaults.
const (
	DefaultReactionTimeout = 30 * time.Second
	DefaultReactionBatch   = 10
)

// Policy registers a policy: a reaction to events of the given types,
// without state of its own. Its handler runs in a worker, at least once
// per event; what it settles is recorded exactly once.
type Policy struct {
	Name   string
	Events []string // the event types it handles
	// Timeout is the handler's time limit; a claim holds each delivery for
	// twice it. Default 30 s, at most 1 h.
	Timeout time.Duration
	// Backoff before the first retry of a failed delivery, doubling up to
	// MaxBackoff. Defaults 1 s and 1 h.
	Backoff, MaxBackoff time.Duration
	// Batch is the most deliveries one claim hands a worker (default 10);
	// they run one after the other, in event order.
	Batch int
	// FromStart makes a policy new to a tenant start at the beginning of
	// its log; by default it starts at the head, reacting to what happens
	// from then on.
	FromStart bool
}

// Process registers a process: a reaction with state per correlation id,
// which its settlements replace and which can set deadlines. It handles
// one event at a time, in event order; its deadlines arrive as events of
// type api.DeadlineEventPrefix+Name.
type Process struct {
	Name   string
	Events []string
	// Correlate names the process instance an event belongs to. An error
	// fails the delivery (retried with the backoff, so a fixed module
	// version handles it).
	Correlate           func(e api.Event) (string, error)
	Timeout             time.Duration
	Backoff, MaxBackoff time.Duration
	FromStart           bool
}

// reaction is a registered policy or process.
type reaction struct {
	h         inboxstore.Handler
	correlate func(api.Event) (string, error) // processes
}

// RegisterPolicy adds a policy. It panics on an invalid or duplicate one.
func (a *App) RegisterPolicy(p Policy) *App {
	if p.Batch == 0 {
		p.Batch = DefaultReactionBatch
	}
	if p.Batch < 1 || p.Batch > api.MaxDeliveries {
		panic(printf.Sprintf("stile: policy %q: batch %d is outside 1-%d", p.Name, p.Batch, api.MaxDeliveries))
	}
	a.addReaction(api.ReactionKindPolicy, p.Name, p.Events, p.Timeout, p.Backoff, p.MaxBackoff, p.Batch, p.FromStart, nil)
	return a
}

// RegisterProcess adds a process. It panics on an invalid or duplicate one.
func (a *App) RegisterProcess(p Process) *App {
	if p.Correlate == nil {
		panic(printf.Sprintf("stile: process %q has no Correlate", p.Name))
	}
	types := append(append([]string(nil), p.Events...), api.DeadlineEventPrefix+p.Name)
	a.addReaction(api.ReactionKindProcess, p.Name, types, p.Timeout, p.Backoff, p.MaxBackoff, 1, p.FromStart, p.Correlate)
	return a
}

func (a *App) addReaction(kind, name string, types []string, timeout, backoff, maxBackoff time.Duration,
	batch int, fromStart bool, correlate func(api.Event) (string, error)) {
	if !api.ValidName(name) {
		panic(printf.Sprintf("stile: %s name %q is invalid: use %s", kind, name, api.NameRule))
	}
	if _, dup := a.reactionBy[name]; dup {
		panic(printf.Sprintf("stile: reaction %q is registered twice", name))
	}
	if len(types) == 0 {
		panic(printf.Sprintf("stile: %s %q handles no event types", kind, name))
	}
	seen := map[string]bool{}
	for _, t := range types {
		if !api.ValidName(t) || seen[t] {
			panic(printf.Sprintf("stile: %s %q: event type %q is invalid or listed twice", kind, name, t))
		}
		if strings.HasPrefix(t, "stile.") && t != api.DeadlineEventPrefix+name {
			panic(printf.Sprintf("stile: %s %q: event type %q is reserved", kind, name, t))
		}
		seen[t] = true
	}
	if timeout == 0 {
		timeout = DefaultReactionTimeout
	}
	if timeout < time.Millisecond || timeout > api.MaxReactionTimeout {
		panic(printf.Sprintf("stile: %s %q: timeout %s is outside 1ms-%s", kind, name, timeout, api.MaxReactionTimeout))
	}
	if backoff == 0 {
		backoff = DefaultBackoff
	}
	if maxBackoff == 0 {
		maxBackoff = max(DefaultMaxBackoff, backoff)
	}
	if backoff < time.Millisecond || maxBackoff < backoff {
		panic(printf.Sprintf("stile: %s %q: backoff %s..%s is invalid", kind, name, backoff, maxBackoff))
	}
	r := &reaction{correlate: correlate, h: inboxstore.Handler{Name: name, Kind: kind, Types: types,
		TimeoutMs: timeout.Milliseconds(), Backoff: fence.Backoff{BaseMs: backoff.Milliseconds(), MaxMs: maxBackoff.Milliseconds()},
		Batch: batch, FromStart: fromStart}}
	r.h.Overrides = a.overrideOf(kind)
	a.reactions = append(a.reactions, r)
	a.reactionBy[name] = r
}

// overrideOf looks up the time limit an aggregate sets for reactions of
// kind to the events of its streams (0: none). It looks when asked, so
// the order of registrations does not matter.
func (a *App) overrideOf(kind string) func(aggregate string) int64 {
	return func(name string) int64 {
		agg := a.aggregates[name]
		if kind == api.ReactionKindProcess {
			return agg.processMs
		}
		return agg.policyMs
	}
}

func (a *App) handlers() []inboxstore.Handler {
	hs := make([]inboxstore.Handler, len(a.reactions))
	for i, r := range a.reactions {
		hs[i] = r.h
	}
	return hs
}

func (a *App) reactionNames() string {
	if len(a.reactions) == 0 {
		return "no policies or processes"
	}
	names := make([]string, len(a.reactions))
	for i, r := range a.reactions {
		names[i] = r.h.Name
	}
	return strings.Join(names, ", ")
}
