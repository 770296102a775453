package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/executor/process"
)

// What one side registers and the other does not is a warning each way:
// a module's kind without a handler waits, and a handler's kind the module
// does not register gets its claims refused.
func TestUnhandledWarnsBothWays(t *testing.T) {
	t.Parallel()
	module := api.Status{Kinds: []api.ModuleKind{{Name: "greet", Queue: "default"}, {Name: "forgotten", Queue: "later"}},
		Reactions: []api.ModuleReaction{{Name: "audit", Kind: api.ReactionKindPolicy}}}
	handlers := process.Ready{Kinds: []string{"greet", "stray"}, Reactions: []string{"audit", "ghost"}}
	require.Equal(t, []string{
		`job kind "forgotten" (queue later) has no handler in ./h: its jobs wait until a worker handles them`,
		`./h handles job kind "stray", which the module does not register: the tenants refuse its claims, and none of its jobs run; register the kind or drop its handler`,
		`./h handles reaction "ghost", which the module does not register: the tenants refuse its claims of deliveries; register it or drop its handler`,
	}, unhandled(module, handlers, "./h"))
	require.Empty(t, unhandled(api.Status{Kinds: []api.ModuleKind{{Name: "greet"}}}, process.Ready{Kinds: []string{"greet"}}, "./h"))
}
