package host_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/native"
)

// TestRegistrationsAsksTheModuleWithoutATenant: the module's kinds and
// reactions come from an instance over an in-memory database, with no
// file written (the working directory stays empty).
func TestRegistrationsAsksTheModuleWithoutATenant(t *testing.T) {
	t.Chdir(t.TempDir())
	f, err := native.New(native.Config{App: testapp.App()})
	require.NoError(t, err)
	st, err := host.Registrations(context.Background(), f)
	require.NoError(t, err)
	require.Contains(t, st.Kinds, api.ModuleKind{Name: "test.echo", Queue: api.DefaultQueue})
	require.Contains(t, st.Kinds, api.ModuleKind{Name: "test.other", Queue: "other"})
	require.Contains(t, st.Reactions, api.ModuleReaction{Name: testapp.RefundPolicy, Kind: api.ReactionKindPolicy})
	require.Contains(t, st.Reactions, api.ModuleReaction{Name: testapp.ExpiryProcess, Kind: api.ReactionKindProcess})
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	require.Empty(t, entries, "nothing was written")
}
