package runtime

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
)

// Event and command types as Go types (api.EventData, api.CommandData):
// the module registers them, and whatever of the module reads an event or
// a command of a registered type receives its data decoded, in Value.
// Data that does not decode is refused where it comes in (an append, a
// command, a decision: 400 or 422, nothing written); an event stored before
// its type was registered (or by a module whose type read it otherwise)
// that does not decode is reported with its seq where it is read: the
// command fails with it, the projection stalls at it. Never a panic.

// RegisterEventTypes registers event types: each value names its type
// (EventType) and is the Go type the type's data decodes into (give zero
// values: OrderPlaced{}). It panics on an invalid or duplicate type, or a
// pointer.
func (a *App) RegisterEventTypes(types ...api.EventData) *App {
	for _, v := range types {
		a.eventTypes = registerType(a.eventTypes, "event", v, func() string { return v.EventType() })
	}
	return a
}

// RegisterCommandTypes registers command types as RegisterEventTypes
// registers event types: Decide receives a registered command's data
// decoded, in Command.Value.
func (a *App) RegisterCommandTypes(types ...api.CommandData) *App {
	for _, v := range types {
		a.commandTypes = registerType(a.commandTypes, "command", v, func() string { return v.CommandType() })
	}
	return a
}

// goType is a registered event or command type: its Go type, and its
// decoder. The decoder is a field set by the registration, not a call, so
// that a module that registers no type links no JSON decoding
// (encoding/json is about 250 KB of a module, gzipped).
type goType struct {
	rt     reflect.Type
	decode func(reflect.Type, json.RawMessage) (any, error)
}

// decodeInto decodes data into a value of g's type; the error says which
// type it does not fit.
func (g goType) decodeInto(data json.RawMessage) (any, error) {
	v, err := g.decode(g.rt, data)
	if err != nil {
		return nil, &undecodable{rt: g.rt, err: err}
	}
	return v, nil
}

func registerType(m map[string]goType, what string, v any, name func() string) map[string]goType {
	if v == nil {
		panic(printf.Sprintf("stile: a nil %s type", what))
	}
	rt := reflect.TypeOf(v)
	if rt.Kind() == reflect.Pointer {
		panic(printf.Sprintf("stile: %s type %s: register the value type, not a pointer", what, rt))
	}
	n := name()
	if !api.ValidName(n) {
		panic(printf.Sprintf("stile: %s type %q (%s) is invalid: use %s", what, n, rt, api.NameRule))
	}
	if m == nil {
		m = map[string]goType{}
	}
	if prev, dup := m[n]; dup {
		panic(printf.Sprintf("stile: %s type %q is registered twice (%s and %s)", what, n, prev.rt, rt))
	}
	m[n] = goType{rt: rt, decode: decodeData}
	return m
}

// decodeData decodes data into a new value of rt, as encoding/json does;
// absent or null data is rt's zero value.
func decodeData(rt reflect.Type, data json.RawMessage) (any, error) {
	p := reflect.New(rt)
	if len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, p.Interface()); err != nil {
			return nil, err
		}
	}
	return p.Elem().Interface(), nil
}

// typedEvent is e with Value set when the module registered e's type;
// the error says into which type its data does not decode (the caller
// names the event).
func (a *App) typedEvent(e api.Event) (api.Event, error) {
	gt, ok := a.eventTypes[e.Type]
	if !ok {
		return e, nil
	}
	v, err := gt.decodeInto(e.Data)
	if err != nil {
		return e, err
	}
	e.Value = v
	return e, nil
}

// undecodable is a stored event whose data does not decode into the Go
// type the module registers for its type.
type undecodable struct {
	rt  reflect.Type
	err error
}

func (u *undecodable) Error() string {
	return printf.Sprintf("data does not decode into %s: %s", u.rt, u.err.Error())
}
func (u *undecodable) Unwrap() error { return u.err }

// dataProblem says why data of an event or command type the module
// registered does not decode ("" if it does, or the type is not
// registered).
func dataProblem(m map[string]goType, typ string, data json.RawMessage) string {
	gt, ok := m[typ]
	if !ok {
		return ""
	}
	if _, err := gt.decodeInto(data); err != nil {
		return typ + " " + oneLine(err.Error())
	}
	return ""
}

// EmitData is a decision to append events of typed data (Emit, typed).
// Data that does not encode refuses the command (422 command_rejected).
func EmitData(data ...api.EventData) Decision {
	var d Decision
	for _, v := range data {
		e, err := api.NewEventOf(v)
		if err != nil {
			if d.unencoded == nil {
				d.unencoded = err
			}
			continue
		}
		d.Events = append(d.Events, e)
	}
	return d
}
