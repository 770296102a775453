package runtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
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
	// Value is the command's data decoded into the Go type the module
	// registered for its type (App.RegisterCommandTypes); nil for a type
	// it did not register.
	Value any
}

// Decision is what an aggregate decided: the events to append to its
// stream and the jobs to enqueue, committed together with the command.
type Decision struct {
	Events []api.NewEvent
	Jobs   []api.EnqueueRequest
	// unencoded is the first event of EmitData or job of EnqueueArgs
	// whose data did not encode: the command is refused with it, writing
	// nothing.
	unencoded error
}

// Emit is a decision to append events.
func Emit(events ...api.NewEvent) Decision { return Decision{Events: events} }

// Enqueue adds jobs to the decision: they are enqueued in the command's
// transaction, so they exist if and only if its events do.
func (d Decision) Enqueue(jobs ...api.EnqueueRequest) Decision {
	d.Jobs = append(d.Jobs, jobs...)
	return d
}

// EnqueueArgs adds the job of typed args (api.JobArgs) to the decision,
// with the options set in opts (its Kind and Args empty). Args that do not
// encode refuse the command (422 command_rejected, saying why), as an
// invalid event does.
func (d Decision) EnqueueArgs(args api.JobArgs, opts api.EnqueueRequest) Decision {
	r, err := api.EnqueueOf(args, opts)
	if err != nil {
		if d.unencoded == nil {
			d.unencoded = err
		}
		return d
	}
	return d.Enqueue(r)
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
	// Snapshots, when set, keeps the aggregate's state every few events
	// so that a command reads it and the events after it, not the whole
	// stream (nil: every command folds the whole stream).
	Snapshots *Snapshots[S]
}

// Snapshots says how an aggregate's state is kept. A snapshot is written
// in a command's transaction, of the state folded before Decide sees it.
// A state Encode refuses, or whose encoding does not come back the same
// through Decode and Encode, is never kept, and the host's log says so.
type Snapshots[S any] struct {
	// Every is how many events a stream grows between snapshots
	// (0: DefaultSnapshotEvery).
	Every int
	// Version names the fold a snapshot was made by: change it whenever
	// Evolve, S or Encode changes, and the next command on each stream
	// folds it from the start and keeps a new snapshot. Empty: the
	// module's build, so every deployment starts the snapshots again (a
	// host that names no build, such as a native test, then keeps none).
	Version string
	// Encode and Decode write and read a state.
	Encode func(S) ([]byte, error)
	Decode func([]byte) (S, error)
}

// JSONSnapshots keeps an aggregate's state as JSON with encoding/json, every
// DefaultSnapshotEvery events, under version ("": the module's build). S's
// fields must be exported: a state that does not decode back
// reflect.DeepEqual to itself is never kept. It links encoding/json's encoder and decoder
// into the module (about 250 KB gzipped when nothing else does): a
// hand-written Encode and Decode cost far less.
func JSONSnapshots[S any](version string) *Snapshots[S] {
	return &Snapshots[S]{Version: version,
		Encode: func(s S) ([]byte, error) {
			b, err := json.Marshal(s)
			if err != nil {
				return nil, err
			}
			// JSON drops unexported fields without a word: a state that
			// does not decode back equal to itself is never kept.
			var back S
			if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, s) {
				return nil, errors.New("the state does not come back from its JSON equal to itself")
			}
			return b, nil
		},
		Decode: func(b []byte) (S, error) {
			var s S
			err := json.Unmarshal(b, &s)
			return s, err
		}}
}

// DefaultSnapshotEvery is how many events a stream grows between
// snapshots unless its aggregate says otherwise.
const DefaultSnapshotEvery = 100

// aggregate is a registered Aggregate with its state type erased.
type aggregate struct {
	name string
	// fold evolves a state (fresh: the initial one) by events; decide
	// decides a command on a folded state. A panic of the module's code
	// in either is returned as a *decidePanic.
	fold   func(state any, fresh bool, events []eventstore.Event) (any, error)
	decide func(state any, c Command) (Decision, error)
	// encode keeps a state as a snapshot, false for one that would not
	// come back equal; decode reads it back. Both nil: no snapshots.
	encode func(state any) ([]byte, bool)
	decode func(b []byte) (any, error)
	// snapshotEvery is 0 for no snapshots; snapshotVersion "" for the
	// module's build.
	snapshotEvery   int
	snapshotVersion string
	// policyMs and processMs override the time limits of policies and
	// processes for its events (0: they do not).
	policyMs, processMs int64
}

// RegisterAggregate adds an aggregate to app. It panics on an invalid or
// duplicate registration.
func RegisterAggregate[S any](app *App, agg Aggregate[S]) *App {
	// Only what touches S is generic; the rest is addAggregate's (keeping
	// the generic part small keeps the module small).
	initial, evolve, decide := agg.Initial, agg.Evolve, agg.Decide
	if decide == nil {
		panic(printf.Sprintf("stile: aggregate %q has no Decide", agg.Name))
	}
	a := aggregate{name: agg.Name}
	if snap := agg.Snapshots; snap != nil {
		if snap.Encode == nil || snap.Decode == nil {
			panic(printf.Sprintf("stile: aggregate %q: Snapshots needs Encode and Decode (or use JSONSnapshots)", agg.Name))
		}
		a.snapshotEvery, a.snapshotVersion = snap.Every, snap.Version
		if a.snapshotEvery <= 0 {
			a.snapshotEvery = DefaultSnapshotEvery
		}
		encode, decode := snap.Encode, snap.Decode
		// A panic in the codec is the module's bug too: the state is then
		// not kept, or the snapshot not read (the stream is folded).
		a.encode = func(state any) (b []byte, ok bool) {
			defer func() {
				if recover() != nil {
					b, ok = nil, false
				}
			}()
			s, _ := state.(S)
			b, err := encode(s)
			if err != nil {
				return nil, false
			}
			back, err := decode(b)
			if err != nil {
				return nil, false
			}
			again, err := encode(back)
			return b, err == nil && bytes.Equal(again, b)
		}
		a.decode = func(b []byte) (_ any, err error) {
			defer recoverDecide(&err)
			return decode(b)
		}
	}
	a.fold = func(state any, fresh bool, events []eventstore.Event) (out any, err error) {
		defer recoverDecide(&err)
		// S may be an interface, whose nil state is a state like any other.
		s, _ := state.(S)
		if fresh && initial != nil {
			s = initial()
		}
		if evolve != nil {
			for _, e := range events {
				ev, err := app.typedEvent(eventView(e))
				if err != nil {
					return nil, printf.Errorf("event %d (%s) on %s: %w", e.Seq, e.Type, e.Stream, err)
				}
				s = evolve(s, ev)
			}
		}
		return s, nil
	}
	a.decide = func(state any, c Command) (d Decision, err error) {
		defer recoverDecide(&err)
		s, _ := state.(S)
		return decide(s, c)
	}
	app.addAggregate(a, agg.PolicyTimeout, agg.ProcessTimeout)
	return app
}

// recoverDecide turns a panic of the module's Evolve or Decide into a
// *decidePanic in *err: a bug, not a refusal; the command fails with its
// stack, writing nothing.
func recoverDecide(err *error) {
	if p := recover(); p != nil {
		*err = &decidePanic{value: p, stack: debug.Stack()}
	}
}

func (a *App) addAggregate(agg aggregate, policyTimeout, processTimeout time.Duration) {
	name := agg.name
	if !api.ValidName(name) || strings.Contains(name, ":") {
		panic(printf.Sprintf("stile: aggregate name %q is invalid: use %s, without ':'", name, api.NameRule))
	}
	if _, dup := a.aggregates[name]; dup {
		panic(printf.Sprintf("stile: aggregate %q is registered twice", name))
	}
	agg.policyMs = overrideMs(name, api.ReactionKindPolicy, policyTimeout)
	agg.processMs = overrideMs(name, api.ReactionKindProcess, processTimeout)
	a.aggregates[name] = agg
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
	if msg := dataProblem(t.app.commandTypes, c.Type, c.Data); msg != "" {
		return api.Refuse(api.CodeInvalidRequest, "%scommand %s: %s", where, c.ID, msg)
	}
	return nil
}

// runCommand applies a validated command: a command id already applied is
// answered with what it did then; otherwise the aggregate decides from its
// stream and its events and jobs are written with the ledger entry.
// source says who sent it (api, reaction:<handler>:<seq>, scheduled).
func (t *Tenant) runCommand(now int64, c api.Command, source string) (api.CommandResult, *api.Error, error) {
	stream := api.StreamOf(c.Aggregate, c.AggregateID)
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
	agg := t.app.aggregates[c.Aggregate]
	st, err := t.foldStream(agg, stream)
	var d Decision
	derr := err
	cmd := Command{Command: c, At: ts(now)}
	if gt, ok := t.app.commandTypes[c.Type]; ok && err == nil {
		// validateCommand refused data that does not decode; a command
		// scheduled by an older module may still not.
		if cmd.Value, err = gt.decodeInto(c.Data); err != nil {
			return api.CommandResult{}, api.Refuse(api.CodeInvalidRequest, "command %s: %s %s", c.ID, c.Type, oneLine(err.Error())), nil
		}
	}
	if err == nil {
		d, derr = agg.decide(st.state, cmd)
	}
	if p := (*decidePanic)(nil); errors.As(derr, &p) {
		t.db.Log(do.LevelError, printf.Sprintf("aggregate %s panicked deciding %s on %s (command %s): %v\n%s",
			c.Aggregate, c.Type, stream, c.ID, p.value, p.stack))
		return api.CommandResult{}, api.Refuse(api.CodeDecidePanicked,
			"%s %s on %s: the aggregate panicked (%s), a bug in the module; its stack is in the host's log", c.Aggregate, c.Type, stream, oneLine(printf.Sprintf("%v", p.value))), nil
	}
	if ref := (*api.Error)(nil); errors.As(err, &ref) {
		return api.CommandResult{}, ref, nil
	}
	if u := (*undecodable)(nil); errors.As(err, &u) {
		return api.CommandResult{}, api.Refuse(api.CodeEventUndecodable, "%s %s on %s: %s", c.Aggregate, c.Type, stream, oneLine(err.Error())), nil
	}
	if err != nil {
		return api.CommandResult{}, nil, err
	}
	version := st.version
	if derr != nil {
		return api.CommandResult{}, api.Refuse(api.CodeCommandRejected,
			"%s %s on %s refused: %s", c.Aggregate, c.Type, stream, oneLine(derr.Error())), nil
	}
	if d.unencoded != nil {
		return api.CommandResult{}, api.Refuse(api.CodeCommandRejected, "%s %s decided an event or a job whose data it could not encode: %s", c.Aggregate, c.Type, oneLine(d.unencoded.Error())), nil
	}
	drafts := make([]eventstore.Draft, len(d.Events))
	for i, e := range d.Events {
		if _, msg := t.app.eventProblem(e); msg != "" {
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
	if st.keep != nil {
		if err := t.events.SaveSnapshot(now, stream, *st.keep); err != nil {
			return api.CommandResult{}, nil, err
		}
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

// maxFoldWithoutSnapshots bounds the events a command folds when no
// snapshot can be kept (the aggregate has none, or the host names no build
// and the aggregate no version): each of its commands folds them all, so a
// longer stream is refused with advice, not left to run into the
// request's CPU limit.
const maxFoldWithoutSnapshots = 100_000

// foldPage is how many events a command's fold reads at a time, so its
// memory stays bounded whatever the stream's length.
const foldPage = 1000

// foldPageBytes bounds the bytes of one page of a fold.
const foldPageBytes = api.MaxAnswerBytes

// folded is an aggregate's state for a command: the fold of its stream's
// events 1..version, and the snapshot to keep in the command's
// transaction, if one is due.
type folded struct {
	state   any
	version int64
	keep    *eventstore.Snapshot
}

// foldStream folds stream for agg: from its snapshot when one of this
// fold's fingerprint is kept, reading only the events after it. When the
// stream has grown by agg.snapshotEvery events since, the state read is
// encoded now, before Decide sees it (so nothing Decide does to it is
// kept), as the snapshot to save.
func (t *Tenant) foldStream(agg aggregate, stream string) (folded, error) {
	fp := t.snapshotFingerprint(agg)
	var f folded
	from := int64(1)
	fromSnapshot := false
	if fp != "" {
		snap, found, err := t.events.Snapshot(stream)
		if err != nil {
			return folded{}, err
		}
		if found && snap.Fingerprint == fp {
			st, err := agg.decode(snap.State)
			if err != nil {
				t.db.Log(do.LevelWarn, printf.Sprintf("the snapshot of %s at version %d does not decode (%v): the stream is folded from its start", stream, snap.Version, err))
			} else {
				f.state, f.version, from, fromSnapshot = st, snap.Version, snap.Version+1, true
			}
		}
	}
	kept := f.version
	if !fromSnapshot {
		st, err := agg.fold(nil, true, nil)
		if err != nil {
			return folded{}, err
		}
		f.state = st
	}
	for {
		page, cut, err := t.events.ReadStream(stream, from, foldPage, foldPageBytes)
		if err != nil {
			return folded{}, err
		}
		if len(page) == 0 {
			break
		}
		if fp == "" && page[len(page)-1].Version-kept > maxFoldWithoutSnapshots {
			return folded{}, api.Refuse(api.CodeCommandRejected, "stream %s has more than %d events, more than an aggregate without snapshots folds for a command: set Aggregate.Snapshots, and a command reads the state kept every 100 events", stream, maxFoldWithoutSnapshots)
		}
		if f.state, err = agg.fold(f.state, false, page); err != nil {
			return folded{}, err
		}
		f.version = page[len(page)-1].Version
		from = f.version + 1
		if len(page) < foldPage && !cut {
			break
		}
	}
	if fp != "" && agg.snapshotEvery > 0 && f.version-kept >= int64(agg.snapshotEvery) {
		if b, ok := agg.encode(f.state); ok {
			f.keep = &eventstore.Snapshot{Version: f.version, Fingerprint: fp, State: b}
		} else {
			t.db.Log(do.LevelWarn, printf.Sprintf("aggregate %s keeps no snapshot of %s: its state does not come back from Encode and Decode as it was (with JSON: unexported fields, or values JSON changes); commands fold the whole stream", agg.name, stream))
		}
	}
	return f, nil
}

// snapshotFingerprint names the fold agg's snapshots are made by: its
// SnapshotVersion, else the module's build; "" when neither is known
// (no snapshots).
func (t *Tenant) snapshotFingerprint(agg aggregate) string {
	switch {
	case agg.snapshotEvery == 0:
		return ""
	case agg.snapshotVersion != "":
		return "version " + agg.snapshotVersion
	case t.schema.module != "":
		return "build " + t.schema.module
	}
	return ""
}

func commandResult(id, stream string, version int64, evs []eventstore.Event, jobIDs []string, dup bool) api.CommandResult {
	r := api.CommandResult{ID: id, Stream: stream, Version: version, Events: make([]api.Event, len(evs)), JobIDs: jobIDs, Duplicate: dup}
	for i, e := range evs {
		r.Events[i] = eventView(e)
	}
	return r
}

// eventProblem says what is wrong with an event to append, and the error
// code that says it ("" if nothing is).
func (a *App) eventProblem(e api.NewEvent) (code api.Code, msg string) {
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
	if msg := dataProblem(a.eventTypes, e.Type, e.Data); msg != "" {
		return api.CodeInvalidRequest, msg
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
