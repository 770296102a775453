package runtime

import (
	"encoding/json"
	"errors"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/eventstore"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// Command is a command as an aggregate's Decide sees it.
type Command struct {
	api.Command
	// At is the time the command is applied (the host's clock).
	At time.Time
}

// Decision is what an aggregate decided: the events to append to its
// stream and the jobs to enqueue, committed together with the command.
type Decision struct {
	Events []api.NewEvent
	Jobs   []api.EnqueueRequest
}

// Emit is a decision to append events.
func Emit(events ...api.NewEvent) Decision { return Decision{Events: events} }

// Enqueue adds jobs to the decision: they are enqueued in the command's
// transaction, so they exist if and only if its events do.
func (d Decision) Enqueue(jobs ...api.EnqueueRequest) Decision {
	d.Jobs = append(d.Jobs, jobs...)
	return d
}

// Aggregate registers an aggregate: a stream per id ("<name>:<id>") whose
// state is the fold of its events by Evolve, from Initial, and whose
// commands Decide turns into events. Both are pure: no I/O, no clock but
// Command.At. Decide returning an error refuses the command (422
// command_rejected) and nothing is written.
type Aggregate[S any] struct {
	Name    string
	Initial func() S // nil: S's zero value
	Evolve  func(state S, e api.Event) S
	Decide  func(state S, c Command) (Decision, error)
	// PolicyTimeout and ProcessTimeout, when set, are the time limit of
	// every policy (process) for the events of this aggregate's streams,
	// in place of the reaction's own Timeout: the aggregate knows what
	// reacting to its events takes. At most 1 h.
	PolicyTimeout, ProcessTimeout time.Duration
}

// aggregate is a registered Aggregate with its state type erased.
type aggregate struct {
	name   string
	decide func(history []eventstore.Event, c Command) (Decision, error)
	// policyMs and processMs override the time limits of policies and
	// processes for its events (0: they do not).
	policyMs, processMs int64
}

// RegisterAggregate adds an aggregate to app. It panics on an invalid or
// duplicate registration.
func RegisterAggregate[S any](app *App, agg Aggregate[S]) *App {
	// Only the fold is generic; the rest is addAggregate's (keeping the
	// generic part small keeps the module small).
	initial, evolve, decide := agg.Initial, agg.Evolve, agg.Decide
	app.addAggregate(agg.Name, decide != nil, agg.PolicyTimeout, agg.ProcessTimeout,
		func(history []eventstore.Event, c Command) (Decision, error) {
			var s S
			if initial != nil {
				s = initial()
			}
			if evolve != nil {
				for _, e := range history {
					s = evolve(s, eventView(e))
				}
			}
			return decide(s, c)
		})
	return app
}

func (a *App) addAggregate(name string, decides bool, policyTimeout, processTimeout time.Duration,
	decide func(history []eventstore.Event, c Command) (Decision, error)) {
	if !api.ValidName(name) || strings.Contains(name, ":") {
		panic(printf.Sprintf("stile: aggregate name %q is invalid: use %s, without ':'", name, api.NameRule))
	}
	if _, dup := a.aggregates[name]; dup {
		panic(printf.Sprintf("stile: aggregate %q is registered twice", name))
	}
	if !decides {
		panic(printf.Sprintf("stile: aggregate %q has no Decide", name))
	}
	a.aggregates[name] = aggregate{name: name,
		policyMs:  overrideMs(name, api.ReactionKindPolicy, policyTimeout),
		processMs: overrideMs(name, api.ReactionKindProcess, processTimeout),
		decide: func(history []eventstore.Event, c Command) (d Decision, err error) {
			// A panic in the module's code is a bug, not a refusal: the
			// command fails with its stack, writing nothing.
			defer func() {
				if p := recover(); p != nil {
					d, err = Decision{}, &decidePanic{value: p, stack: debug.Stack()}
				}
			}()
			return decide(history, c)
		}}
}

// decidePanic is a panic in an aggregate's Evolve or Decide.
type decidePanic struct {
	value any
	stack []byte
}

func (p *decidePanic) Error() string { return printf.Sprintf("panic: %v", p.value) }

// overrideMs checks an aggregate's override of a reaction kind's time
// limit, in ms (0: none).
func overrideMs(aggregate, kind string, d time.Duration) int64 {
	if d != 0 && (d < time.Millisecond || d > api.MaxReactionTimeout) {
		panic(printf.Sprintf("stile: aggregate %q: %s timeout %s is outside 1ms-%s", aggregate, kind, d, api.MaxReactionTimeout))
	}
	return d.Milliseconds()
}

func (a *App) aggregateNames() string {
	names := make([]string, 0, len(a.aggregates))
	for n := range a.aggregates {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "no aggregates"
	}
	return strings.Join(names, ", ")
}

func eventView(e eventstore.Event) api.Event {
	return api.Event{Seq: e.Seq, Stream: e.Stream, Version: e.Version, Type: e.Type, Data: json.RawMessage(e.Data),
		CommandID: e.CommandID, At: ts(e.At)}
}

// validateCommand refuses a command that can be refused without storage.
func (t *Tenant) validateCommand(where string, c api.Command) *api.Error {
	switch {
	case c.ID == "":
		return api.Refuse(api.CodeInvalidRequest, "%smissing field \"id\": give every command an id (a retry with the same id is applied once)", where)
	case !api.ValidName(c.ID):
		return api.Refuse(api.CodeInvalidRequest, "%scommand id %q is invalid: use %s", where, c.ID, api.NameRule)
	case c.Aggregate == "":
		return api.Refuse(api.CodeInvalidRequest, "%smissing field \"aggregate\"", where)
	case c.AggregateID == "" || !api.ValidName(c.AggregateID):
		return api.Refuse(api.CodeInvalidRequest, "%saggregate_id %q is invalid: use %s", where, c.AggregateID, api.NameRule)
	case c.Type == "" || !api.ValidName(c.Type):
		return api.Refuse(api.CodeInvalidRequest, "%scommand type %q is invalid: use %s", where, c.Type, api.NameRule)
	case len(c.Data) > api.MaxEventBytes:
		return api.Refuse(api.CodeTooLarge, "%scommand data of %d bytes exceeds the limit of %d", where, len(c.Data), api.MaxEventBytes)
	}
	if _, ok := t.app.aggregates[c.Aggregate]; !ok {
		return api.Refuse(api.CodeUnknownAggregate, "%sunknown aggregate %q: this module registers %s", where, c.Aggregate, t.app.aggregateNames())
	}
	return nil
}

// runCommand applies a validated command: a command id already applied is
// answered with what it did then; otherwise the aggregate decides from its
// stream and its events and jobs are written with the ledger entry.
// source says who sent it (api, reaction:<handler>:<seq>, scheduled).
func (t *Tenant) runCommand(now int64, c api.Command, source string) (api.CommandResult, *api.Error, error) {
	stream := c.Aggregate + ":" + c.AggregateID
	digest := eventstore.Digest(c.Aggregate, c.AggregateID, c.Type, c.Data)
	rec, found, err := t.events.Command(c.ID)
	if err != nil {
		return api.CommandResult{}, nil, err
	}
	if found {
		if rec.Digest != digest {
			return api.CommandResult{}, api.Refuse(api.CodeCommandIDReused, "command id %s was applied before to a different command (%s %s on %s:%s): use a new id",
				c.ID, rec.Type, rec.Source, rec.Aggregate, rec.AggregateID), nil
		}
		evs, err := t.events.ReadRange(rec.FirstSeq, rec.LastSeq)
		if err != nil {
			return api.CommandResult{}, nil, err
		}
		jobIDs, _ := jsonwire.DecodeStrings(rec.JobIDs)
		return commandResult(c.ID, stream, rec.Version, evs, jobIDs, true), nil, nil
	}
	history, cut, err := t.events.ReadStream(stream, 1, maxStreamRead+1, maxStreamBytes)
	if err != nil {
		return api.CommandResult{}, nil, err
	}
	if len(history) > maxStreamRead || cut {
		return api.CommandResult{}, api.Refuse(api.CodeCommandRejected, "stream %s has more than %d events or %d MiB of them, more than an aggregate folds for a command: keep aggregates' streams short", stream, maxStreamRead, maxStreamBytes>>20), nil
	}
	version := int64(len(history))
	if version > 0 {
		version = history[len(history)-1].Version
	}
	agg := t.app.aggregates[c.Aggregate]
	d, derr := agg.decide(history, Command{Command: c, At: ts(now)})
	if p := (*decidePanic)(nil); errors.As(derr, &p) {
		t.db.Log(do.LevelError, printf.Sprintf("aggregate %s panicked deciding %s on %s (command %s): %v\n%s",
			c.Aggregate, c.Type, stream, c.ID, p.value, p.stack))
		return api.CommandResult{}, api.Refuse(api.CodeDecidePanicked,
			"%s %s on %s: the aggregate panicked (%s), a bug in the module; its stack is in the host's log", c.Aggregate, c.Type, stream, oneLine(printf.Sprintf("%v", p.value))), nil
	}
	if derr != nil {
		return api.CommandResult{}, api.Refuse(api.CodeCommandRejected,
			"%s %s on %s refused: %s", c.Aggregate, c.Type, stream, oneLine(derr.Error())), nil
	}
	drafts := make([]eventstore.Draft, len(d.Events))
	for i, e := range d.Events {
		if _, msg := eventProblem(e); msg != "" {
			return api.CommandResult{}, api.Refuse(api.CodeCommandRejected, "%s %s decided an invalid event %d: %s", c.Aggregate, c.Type, i, msg), nil
		}
		drafts[i] = eventstore.Draft{Type: e.Type, Data: e.Data}
	}
	var first, last int64
	if len(drafts) > 0 {
		first, last, version, err = t.events.Append(now, stream, version, drafts, c.ID)
		if err != nil {
			return api.CommandResult{}, nil, err
		}
		t.reactions.Wake()
	}
	var jobIDs []string
	if len(d.Jobs) > 0 {
		jobIDs, err = t.enqueueDecided(now, c, d.Jobs)
		if err != nil {
			var ref *api.Error
			if errors.As(err, &ref) {
				return api.CommandResult{}, ref, nil
			}
			return api.CommandResult{}, nil, err
		}
	}
	err = t.events.RecordCommand(eventstore.CommandRecord{ID: c.ID, Aggregate: c.Aggregate, AggregateID: c.AggregateID,
		Type: c.Type, Digest: digest, FirstSeq: first, LastSeq: last, Version: version,
		JobIDs: jsonwire.AppendStrings(nil, jobIDs), Source: source, At: now})
	if err != nil {
		return api.CommandResult{}, nil, err
	}
	evs := make([]eventstore.Event, len(drafts))
	for i, dr := range drafts {
		data := dr.Data
		if len(data) == 0 {
			data = []byte("null")
		}
		evs[i] = eventstore.Event{Seq: first + int64(i), Stream: stream, Version: version - int64(len(drafts)-1-i),
			Type: dr.Type, Data: data, CommandID: c.ID, At: now}
	}
	return commandResult(c.ID, stream, version, evs, jobIDs, false), nil, nil
}

// maxStreamRead bounds the events one command folds: an aggregate's
// stream is meant to stay short (no snapshots yet).
const maxStreamRead = 100_000

// maxStreamBytes bounds the bytes of events one command folds: more would
// not fit the module's memory.
const maxStreamBytes = 4 * api.MaxAnswerBytes

func commandResult(id, stream string, version int64, evs []eventstore.Event, jobIDs []string, dup bool) api.CommandResult {
	r := api.CommandResult{ID: id, Stream: stream, Version: version, Events: make([]api.Event, len(evs)), JobIDs: jobIDs, Duplicate: dup}
	for i, e := range evs {
		r.Events[i] = eventView(e)
	}
	return r
}

// eventProblem says what is wrong with an event to append, and the error
// code that says it ("" if nothing is).
func eventProblem(e api.NewEvent) (code api.Code, msg string) {
	switch {
	case e.Type == "" || !api.ValidName(e.Type):
		return api.CodeInvalidRequest, printf.Sprintf("type %q is invalid: use %s", e.Type, api.NameRule)
	case strings.HasPrefix(e.Type, "stile."):
		return api.CodeInvalidRequest, printf.Sprintf("type %q is reserved: types starting with stile. are Stile's", e.Type)
	case len(e.Data) > api.MaxEventBytes:
		return api.CodeTooLarge, printf.Sprintf("data of %d bytes exceeds the limit of %d", len(e.Data), api.MaxEventBytes)
	case len(e.Data) > 0 && !jsonwire.Valid(e.Data):
		return api.CodeInvalidRequest, "data is not JSON"
	}
	return "", ""
}

// enqueueDecided enqueues the jobs a command decided.
func (t *Tenant) enqueueDecided(now int64, c api.Command, reqs []api.EnqueueRequest) ([]string, error) {
	ns := make([]fencestore.NewJob, len(reqs))
	for i, r := range reqs {
		n, e := t.validateEnqueue(i, r)
		if e != nil {
			return nil, api.Refuse(api.CodeCommandRejected, "%s %s decided an invalid job: %s", c.Aggregate, c.Type, e.Message)
		}
		if n.RunAt == 0 {
			n.RunAt = now
		}
		ns[i] = n
	}
	js, err := t.store.Enqueue(now, ns)
	var ref *api.Error
	if errors.As(err, &ref) {
		return nil, api.Refuse(api.CodeCommandRejected, "%s %s decided a job the queue refused: %s", c.Aggregate, c.Type, ref.Message)
	}
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(js))
	for i, j := range js {
		ids[i] = fmtID(j.ID)
	}
	return ids, nil
}
