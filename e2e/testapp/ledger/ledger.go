// Package ledger is a tenant module of one aggregate, "ledger", in
// variants that differ in its Evolve and its snapshots, for the tests of
// snapshots across deployments: the snapshots model test deploys the
// variants in random order over one tenant, and the upgrade test's
// versions register them. Each variant's main package serves it as wasm.
//
// A ledger's state is a hash of its events, by a formula each variant's
// Evolve names, so a state folded by another Evolve, or from a snapshot
// that missed or repeated an event, shows in every answer: Decide writes
// the state it was given into the first event of each Add, and into the
// refusal of each Peek.
package ledger

import (
	"encoding/json"
	"errors"
	"math/bits"
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
)

// Name is the aggregate's name; its streams are "ledger:<id>".
const Name = "ledger"

// Event types: Seen carries the state an Add was decided on, Added one of
// its numbers.
const (
	Seen  = "Seen"
	Added = "Added"
)

// Variant is one version of the aggregate.
type Variant struct {
	Name string
	// Fold names Evolve's formula: "A", "B" or "C".
	Fold string
	// Keeps is whether it keeps snapshots, every Every events, under
	// Version ("": the module's build, which a native host does not name:
	// there it keeps none).
	Keeps   bool
	Version string
	Every   int
}

// Variants are the aggregate's versions, by name: a and a2 fold alike
// under one snapshot version, a2 keeping its snapshots less often; b and
// c fold otherwise, c's snapshots named by the module's build; none folds
// as a does and keeps no snapshots, as a module that predates them.
var Variants = map[string]Variant{
	"a":    {Name: "a", Fold: "A", Keeps: true, Version: "a", Every: 7},
	"a2":   {Name: "a2", Fold: "A", Keeps: true, Version: "a", Every: 13},
	"b":    {Name: "b", Fold: "B", Keeps: true, Version: "b", Every: 5},
	"c":    {Name: "c", Fold: "C", Keeps: true, Every: 6},
	"none": {Name: "none", Fold: "A"},
}

// State is a ledger's state: the number of events folded and their hash.
// From is the version of the snapshot the fold started from (0: the
// stream's start); it is not part of the snapshot, Decode sets it.
type State struct {
	N    int64
	H    uint64
	From int64
}

// String is how Decide writes a state into a Peek's refusal.
func (s State) String() string {
	return "saw n=" + strconv.FormatInt(s.N, 10) + " h=" + strconv.FormatUint(s.H, 10) + " from=" + strconv.FormatInt(s.From, 10)
}

// SeenData is the data of a Seen event.
type SeenData struct {
	N    int64  `json:"n"`
	H    string `json:"h"` // decimal: JSON numbers lose a uint64's low bits
	From int64  `json:"from"`
}

// AddedData is the data of an Added event.
type AddedData struct {
	X int64 `json:"x"`
}

// AddData is the data of an Add command: an Added event for each number.
type AddData struct {
	Xs []int64 `json:"xs"`
}

// Evolve folds one event by the formula fold names.
func Evolve(fold string) func(State, api.Event) State {
	return func(s State, e api.Event) State {
		m := mix(e)
		switch fold {
		case "A":
			s.H = (s.H ^ m) * 1099511628211
		case "B":
			s.H = bits.RotateLeft64(s.H, 13) + 3*m
		case "C":
			s.H = s.H*31 ^ m ^ uint64(s.N)
		default:
			panic("ledger: no fold " + fold)
		}
		s.N++
		return s
	}
}

// Fold is the state of events folded from the start by fold.
func Fold(fold string, events []api.Event) State {
	evolve := Evolve(fold)
	var s State
	for _, e := range events {
		s = evolve(s, e)
	}
	return s
}

// mix is what an event adds to the hash: its type, version and number.
func mix(e api.Event) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(e.Type) {
		h = (h ^ uint64(e.Type[i])) * 1099511628211
	}
	var x int64
	if e.Type == Added {
		x = number(e.Data)
	}
	return h ^ uint64(e.Version)*0x9E3779B97F4A7C15 ^ uint64(x)<<7
}

// number reads AddedData's x without encoding/json, which would be most
// of a long fold's time.
func number(data []byte) int64 {
	_, rest, ok := strings.Cut(string(data), `"x":`)
	if !ok {
		return 0
	}
	rest = strings.TrimLeft(rest, " ")
	end := 0
	for end < len(rest) && (rest[end] == '-' || '0' <= rest[end] && rest[end] <= '9') {
		end++
	}
	x, _ := strconv.ParseInt(rest[:end], 10, 64)
	return x
}

// Encode and Decode keep a state as "N H"; Decode sets From.
func Encode(s State) ([]byte, error) {
	b := strconv.AppendInt(nil, s.N, 10)
	return strconv.AppendUint(append(b, ' '), s.H, 10), nil
}

func Decode(b []byte) (State, error) {
	n, h, ok := strings.Cut(string(b), " ")
	if !ok {
		return State{}, errors.New("ledger: a snapshot is two numbers")
	}
	var s State
	var err1, err2 error
	s.N, err1 = strconv.ParseInt(n, 10, 64)
	s.H, err2 = strconv.ParseUint(h, 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return State{}, err
	}
	s.From = s.N
	return s, nil
}

// Register adds the aggregate at variant v to app.
func Register(app *runtime.App, v string) *runtime.App {
	vr, ok := Variants[v]
	if !ok {
		panic("ledger: no variant " + v)
	}
	agg := runtime.Aggregate[State]{Name: Name, Evolve: Evolve(vr.Fold), Decide: decide}
	if vr.Keeps {
		agg.Snapshots = &runtime.Snapshots[State]{Every: vr.Every, Version: vr.Version, Encode: Encode, Decode: Decode}
	}
	return runtime.RegisterAggregate(app, agg)
}

// App is the module of the aggregate alone, at variant v.
func App(v string) *runtime.App { return Register(runtime.NewApp(), v) }

// decide: Add appends Seen (the state it was given) and an Added per
// number; Peek refuses, saying the state; Nothing appends nothing.
func decide(s State, c runtime.Command) (runtime.Decision, error) {
	switch c.Type {
	case "Add":
		var in AddData
		if err := json.Unmarshal(c.Data, &in); err != nil {
			return runtime.Decision{}, err
		}
		seen, _ := json.Marshal(SeenData{N: s.N, H: strconv.FormatUint(s.H, 10), From: s.From})
		evs := []api.NewEvent{{Type: Seen, Data: seen}}
		for _, x := range in.Xs {
			b, _ := json.Marshal(AddedData{X: x})
			evs = append(evs, api.NewEvent{Type: Added, Data: b})
		}
		return runtime.Emit(evs...), nil
	case "Peek":
		return runtime.Decision{}, errors.New(s.String())
	case "Nothing":
		return runtime.Emit(), nil
	}
	return runtime.Decision{}, errors.New("ledger: unknown command type " + c.Type)
}
