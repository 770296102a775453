package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

// TestStatusListsWhatTheModuleRegisters: GET /status names the module's
// job kinds (sorted, with their queues) and its reactions (in
// registration order), which handlers must run.
func TestStatusListsWhatTheModuleRegisters(t *testing.T) {
	app := runtime.NewApp().
		RegisterJob(runtime.JobKind{Name: "mail.send", Queue: "email"}).
		RegisterJob(runtime.JobKind{Name: "bill"}).
		RegisterPolicy(runtime.Policy{Name: "notify", Events: []string{"placed"}}).
		RegisterProcess(runtime.Process{Name: "checkout", Events: []string{"placed"}, Timeout: time.Second,
			Correlate: func(api.Event) (string, error) { return "x", nil }})
	h := stiletest.New(t, stiletest.Config{App: app})
	st, err := h.Tenant("acme").Status(context.Background())
	require.NoError(t, err)
	require.Equal(t, []api.ModuleKind{{Name: "bill", Queue: api.DefaultQueue}, {Name: "mail.send", Queue: "email"}}, st.Kinds)
	require.Equal(t, []api.ModuleReaction{{Name: "notify", Kind: api.ReactionKindPolicy}, {Name: "checkout", Kind: api.ReactionKindProcess}}, st.Reactions)
}
