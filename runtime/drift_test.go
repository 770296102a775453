package runtime_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/schema"
	"github.com/stile-run/stile/stiletest"
)

func appWithMigration(sql string) *runtime.App {
	return runtime.NewApp().RegisterJob(runtime.JobKind{Name: "k"}).
		Migrations(schema.Migration{Version: 1, Name: "accounts", SQL: sql})
}

// TestAChangedMigrationIsReportedNotRunAgain: a module whose applied
// migration's SQL changed says so in GET /status, and serves on.
func TestAChangedMigrationIsReportedNotRunAgain(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	h := stiletest.New(t, stiletest.Config{App: appWithMigration(`CREATE TABLE accounts (email TEXT PRIMARY KEY) STRICT`), DataDir: dir})
	st, err := h.Tenant("acme").Status(ctx)
	require.NoError(t, err)
	require.Empty(t, st.MigrationDrift)
	require.NoError(t, h.Close())

	h = stiletest.New(t, stiletest.Config{App: appWithMigration(`CREATE TABLE accounts (email TEXT PRIMARY KEY, name TEXT) STRICT`), DataDir: dir})
	st, err = h.Tenant("acme").Status(ctx)
	require.NoError(t, err, "the tenant serves on")
	require.Len(t, st.MigrationDrift, 1)
	require.Contains(t, st.MigrationDrift[0], "migration 1_accounts of the module's own tables changed after it was applied")
	require.Contains(t, st.MigrationDrift[0], "it is not run again")
	fresh, err := h.Tenant("globex").Status(ctx)
	require.NoError(t, err)
	require.Empty(t, fresh.MigrationDrift, "a new tenant applies the migration as it is now")
}

func TestChecksumsFollowTheSQL(t *testing.T) {
	a := schema.Migration{Version: 1, Name: "x", SQL: "CREATE TABLE a (x INT) STRICT"}
	b := a
	b.SQL += " "
	require.Len(t, a.Checksum(), 16)
	require.Equal(t, a.Checksum(), a.Checksum())
	require.NotEqual(t, a.Checksum(), b.Checksum())
}
