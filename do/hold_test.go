package do_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
)

// holdCase is one held claim's stile-hold, a commit's stile-woke, and
// whether the commit wakes the claim; testdata/holds.json holds them for
// abi.mjs's holdMatches to agree with.
type holdCase struct {
	Hold  string `json:"hold"`
	Woke  string `json:"woke"`
	Wakes bool   `json:"wakes"`
}

func holdCases() []holdCase {
	q := func(h do.Hold) string { return string(h.AppendJSON(nil)) }
	return []holdCase{
		{q(do.Hold{Queues: []string{"a"}}), q(do.Hold{Queues: []string{"a"}, Kinds: []string{"x"}}), true},
		{q(do.Hold{Queues: []string{"a"}}), q(do.Hold{Queues: []string{"b"}, Kinds: []string{"x"}}), false},
		{q(do.Hold{Queues: []string{"*"}}), q(do.Hold{Queues: []string{"b"}}), true},
		{q(do.Hold{Queues: []string{"a", "b"}, Kinds: []string{"x"}}), q(do.Hold{Queues: []string{"b"}, Kinds: []string{"y"}}), false},
		{q(do.Hold{Queues: []string{"a", "b"}, Kinds: []string{"x"}}), q(do.Hold{Queues: []string{"b"}, Kinds: []string{"y", "x"}}), true},
		{q(do.Hold{Queues: []string{"a"}, Kinds: []string{"x"}}), q(do.Hold{Queues: []string{"a"}}), true}, // a resumed queue: any kind
		{q(do.Hold{Queues: []string{"a"}}), q(do.Hold{Reactions: true}), false},
		{q(do.Hold{Reactions: true}), q(do.Hold{Reactions: true, Queues: []string{"a"}}), true},
		{q(do.Hold{Reactions: true}), q(do.Hold{Queues: []string{"a"}}), false},
		{"", q(do.Hold{Queues: []string{"a"}}), true}, // no stile-hold: any wake
		{q(do.Hold{Queues: []string{"a"}}), "", true}, // no stile-woke: every claim
		{q(do.Hold{Queues: []string{"a"}}), "not json", true},
	}
}

func TestHoldMatches(t *testing.T) {
	for _, c := range holdCases() {
		h, hok := do.ParseHold(c.Hold)
		w, wok := do.ParseHold(c.Woke)
		require.Equal(t, c.Wakes, !hok || !wok || h.Matches(w), "hold %s, woke %s", c.Hold, c.Woke)
	}
	b, err := json.MarshalIndent(holdCases(), "", "  ")
	require.NoError(t, err)
	b = append(b, '\n')
	if *update {
		require.NoError(t, os.WriteFile("testdata/holds.json", b, 0o644))
	}
	want, err := os.ReadFile("testdata/holds.json")
	require.NoError(t, err, "run go test ./do -run TestHoldMatches -update")
	require.Equal(t, string(want), string(b), "testdata/holds.json is stale: go test ./do -run TestHoldMatches -update")
}
