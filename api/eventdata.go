package api

import (
	"encoding/json"
	"strings"

	"github.com/stile-run/stile/internal/printf"
)

// EventData is an event's data as a Go type: EventType names the event
// type, and the value, as JSON, is the event's data. EventType must answer
// on the type's zero value (a struct type whose EventType has a value
// receiver). A module registers its types (runtime.App.RegisterEventTypes)
// so that Evolve and projections receive decoded values (Event.Value);
// decisions emit them (runtime.EmitData), appends send them (NewEventOf),
// and a reaction's handler decodes its event with DecodeEvent. The JSON
// is what an untyped call writes: a module that moves to typed events
// reads the events an untyped one wrote.
type EventData interface{ EventType() string }

// CommandData is a command's data as a Go type: CommandType names the
// command type (on the zero value, as EventType does). A module registers
// its types (runtime.App.RegisterCommandTypes) so that Decide receives the
// decoded value (runtime.Command.Value); callers build the command with
// CommandOf.
type CommandData interface{ CommandType() string }

// StreamOf is the stream of an aggregate's instance, "<aggregate>:<id>":
// the one place a stream name is built (SplitStream parses it).
func StreamOf(aggregate, id string) string { return aggregate + ":" + id }

// SplitStream is the aggregate and the id of a stream StreamOf built; ok
// is false for a stream of no aggregate (without ':').
func SplitStream(stream string) (aggregate, id string, ok bool) {
	return strings.Cut(stream, ":")
}

// AggregateID is the id of the aggregate instance whose stream e is in
// ("" for a stream of no aggregate).
func (e Event) AggregateID() string {
	_, id, _ := SplitStream(e.Stream)
	return id
}

// Aggregate is the name of the aggregate whose stream e is in ("" for a
// stream of no aggregate).
func (e Event) Aggregate() string {
	name, _, ok := SplitStream(e.Stream)
	if !ok {
		return ""
	}
	return name
}

// NewEventOf is the event that appends data: its type and its JSON.
func NewEventOf(data EventData) (NewEvent, error) {
	if data == nil {
		return NewEvent{}, printf.Errorf("event: no data (a nil EventData)")
	}
	b, err := json.Marshal(data)
	if err != nil {
		return NewEvent{}, printf.Errorf("event %s: encode the %T data: %w", data.EventType(), data, err)
	}
	return NewEvent{Type: data.EventType(), Data: b}, nil
}

// CommandOf is the command with data as its type and its data.
func CommandOf(id, aggregate, aggregateID string, data CommandData) (Command, error) {
	if data == nil {
		return Command{}, printf.Errorf("command %s: no data (a nil CommandData)", id)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return Command{}, printf.Errorf("command %s %s: encode the %T data: %w", id, data.CommandType(), data, err)
	}
	return Command{ID: id, Aggregate: aggregate, AggregateID: aggregateID, Type: data.CommandType(), Data: b}, nil
}

// DecodeEvent decodes e's data into a T as encoding/json does (fields T
// lacks are ignored; absent or null data is T's zero value). An event of
// another type, or data that does not fit, is an error that names the
// event by its seq, stream and type.
func DecodeEvent[T EventData](e Event) (T, error) {
	var v T
	if e.Type != v.EventType() {
		return v, printf.Errorf("event %d (%s) on %s is not of type %s", e.Seq, e.Type, e.Stream, v.EventType())
	}
	if err := unmarshalData(e.Data, &v); err != nil {
		return v, printf.Errorf("event %d (%s) on %s does not decode into %T: %w", e.Seq, e.Type, e.Stream, v, err)
	}
	return v, nil
}
