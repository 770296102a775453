package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp/ledger"
	"github.com/stile-run/stile/e2e/testapp/upgrade"
	"github.com/stile-run/stile/stiletest"
)

// A deployment over one data directory whose module is replaced, version
// by version (package upgrade): a failing migration, its fix with a job
// kind removed, a rollback over an additive migration and one over a
// destructive migration. Across them an aggregate keeps snapshots, changes
// its Evolve and snapshot version, rolls back, and drops its snapshots:
// every command decides on the fold of its whole stream by the deployed
// Evolve, from a snapshot only when it is that fold's.
func TestUpgradesNative(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	upgrades(t, func(v string) deployment {
		return stiletest.New(t, stiletest.Config{App: upgrade.App(v), DataDir: dir, Token: token})
	}, false)
}

func TestUpgradesWazero(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	upgrades(t, func(v string) deployment {
		return stiletest.New(t, stiletest.Config{Package: "github.com/stile-run/stile/e2e/testapp/upgrade/" + v, DataDir: dir, Token: token})
	}, true)
}

// TestUpgradesWorkerd replaces the Worker's module over the objects'
// persisted storage, as a deploy does.
func TestUpgradesWorkerd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	upgrades(t, func(v string) deployment {
		w := &stiletest.Workerd{Wasm: func(tb testing.TB) []byte {
			return stiletest.BuildWasm(tb, "github.com/stile-run/stile/e2e/testapp/upgrade/"+v)
		}, Token: token, Persist: dir}
		w.Start(t)
		return workerdDeployment{w}
	}, true)
}

// deployment is one version of the module running over the deployment's
// storage.
type deployment interface {
	Client() *client.Client
	Tenant(name string) *client.Tenant
	Close() error
}

type workerdDeployment struct{ w *stiletest.Workerd }

func (d workerdDeployment) Client() *client.Client            { return d.w.Client() }
func (d workerdDeployment) Tenant(name string) *client.Tenant { return d.w.Client().Tenant(name) }
func (d workerdDeployment) Close() error {
	dirs := d.w.Dirs()
	d.w.Close()
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s is left after the Worker closed (%v)", dir, err)
		}
	}
	return nil
}

func upgrades(t *testing.T, deploy func(version string) deployment, wasm bool) {
	ctx := context.Background()
	const tenant = "acme"
	note := func(ten *client.Tenant, body string) (int64, error) {
		var out struct{ Notes int64 }
		err := ten.Tx(ctx, "note", map[string]string{"body": body}, &out)
		return out.Notes, err
	}
	status := func(ten *client.Tenant) api.Status {
		st, err := ten.Status(ctx)
		require.NoError(t, err)
		return st
	}
	directory := func(cl *client.Client) api.TenantInfo {
		page, err := cl.Tenants(ctx, api.TenantsQuery{})
		require.NoError(t, err)
		require.Len(t, page.Tenants, 1)
		return page.Tenants[0]
	}

	// decide sends an Add of n numbers to ledger u1 and checks that it was
	// decided on the fold of the whole stream by Evolve fold; it returns
	// the version of the snapshot that fold started from (0: none).
	adds := 0
	decide := func(ten *client.Tenant, fold string, n int) int64 {
		t.Helper()
		var before []api.Event
		for {
			page, err := ten.Stream(ctx, "ledger:u1", int64(len(before))+1, 1000)
			require.NoError(t, err)
			before = append(before, page.Events...)
			if page.Next == 0 {
				break
			}
		}
		adds++
		xs := make([]int64, n)
		for i := range xs {
			xs[i] = int64(adds*1000 + i)
		}
		data, err := json.Marshal(ledger.AddData{Xs: xs})
		require.NoError(t, err)
		res, err := ten.Command(ctx, api.Command{ID: "add-" + strconv.Itoa(adds), Aggregate: ledger.Name, AggregateID: "u1", Type: "Add", Data: data})
		require.NoError(t, err)
		require.Equal(t, int64(len(before)+1+n), res.Version)
		var seen ledger.SeenData
		require.NoError(t, json.Unmarshal(res.Events[0].Data, &seen))
		want := ledger.Fold(fold, before)
		require.Equal(t, want.N, seen.N)
		require.Equal(t, strconv.FormatUint(want.H, 10), seen.H, "Add %d was not decided on the fold of its stream by Evolve %s (it started from the snapshot at %d)", adds, fold, seen.From)
		return seen.From
	}
	snapshots := func(ten *client.Tenant) int64 {
		st, err := ten.Storage(ctx)
		require.NoError(t, err)
		for _, k := range st.Kinds {
			if k.Kind == "snapshots" {
				return k.Rows
			}
		}
		t.Fatalf("GET /storage counts no snapshots: %+v", st.Kinds)
		return 0
	}

	// v1: a note, two report jobs and a mail job that waits for one.
	h := deploy("v1")
	ten := h.Client().Tenant(tenant)
	created, err := ten.Create(ctx) // its migrations run as it is created
	require.NoError(t, err)
	require.True(t, created.Created)
	require.Equal(t, api.SchemaState{Version: 1, Known: 1}, status(ten).ModuleSchema)
	n, err := note(ten, "first")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	r1, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "report.build"})
	require.NoError(t, err)
	r2, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "report.build"})
	require.NoError(t, err)
	child, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "mail.send", DependsOn: []string{r1.ID}})
	require.NoError(t, err)
	st := status(ten)
	require.Equal(t, api.SchemaState{Version: 1, Known: 1}, st.ModuleSchema)
	v1 := st.Module
	if wasm {
		require.Regexp(t, `^[0-9a-f]{12}$`, v1, "the module's version is a hash of its bytes")
	}
	// The ledger at variant a keeps a snapshot every 7 events.
	require.Zero(t, decide(ten, "A", 19), "the first command folds no event")
	require.Zero(t, decide(ten, "A", 1), "20 events, no snapshot yet: this command folds them and keeps one")
	require.Equal(t, int64(20), decide(ten, "A", 1))
	require.Equal(t, int64(1), snapshots(ten))
	require.NoError(t, h.Close())

	// v2bad: its migration fails. The failure is recorded, registered
	// transactions answer 503 naming it, and the rest serves.
	h = deploy("v2bad")
	ten = h.Client().Tenant(tenant)
	_, err = note(ten, "second")
	requireCode(t, err, http.StatusServiceUnavailable, api.CodeMigrationFailed)
	require.ErrorContains(t, err, "migration 2_tags of the module's own tables failed (attempt 1): no such column: tags")
	st = status(ten)
	require.NotNil(t, st.ModuleSchema.Failed)
	require.Equal(t, int64(1), st.ModuleSchema.Version, "nothing of the failed migration stayed")
	require.Equal(t, "tags", st.ModuleSchema.Failed.Name)
	_, err = ten.Enqueue(ctx, api.EnqueueRequest{Kind: "mail.send"})
	require.NoError(t, err, "routes that need no module table serve")
	m, err := ten.Migrate(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), m.ModuleSchema.Failed.Attempts, "POST /migrations tries it again")
	require.Contains(t, directory(h.Client()).Failed, "2_tags: no such column: tags", "the directory shows the failure")
	require.NoError(t, h.Close())

	// v2: the fix applies and clears the failure; report.build is gone,
	// so its queued jobs end dead, saying why, and their dependent follows.
	h = deploy("v2")
	ten = h.Client().Tenant(tenant)
	// The first answer of the new module says what its start applied;
	// later ones applied nothing.
	require.Equal(t, api.SchemaState{Version: 2, Known: 2, Applied: 1}, status(ten).ModuleSchema)
	require.Equal(t, api.SchemaState{Version: 2, Known: 2}, status(ten).ModuleSchema)
	n, err = note(ten, "second")
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	st = status(ten)
	require.Nil(t, st.ModuleSchema.Failed)
	require.Equal(t, int64(2), st.ModuleSchema.Version)
	if wasm {
		require.NotEqual(t, v1, st.Module)
	}
	for _, id := range []string{r1.ID, r2.ID} {
		j, err := ten.Job(ctx, id)
		require.NoError(t, err, "a job of a removed kind stays visible")
		require.Equal(t, "dead", j.State)
		require.Contains(t, j.LastError, "this module no longer registers the job's kind (it registers mail.send)")
	}
	j, err := ten.Job(ctx, child.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", j.State, "its dependent follows as after any dead parent")
	_, err = ten.Retry(ctx, r1.ID)
	requireCode(t, err, http.StatusBadRequest, api.CodeUnknownKind)
	info := directory(h.Client())
	require.Empty(t, info.Failed)
	require.Equal(t, int64(2), info.Version)
	require.Equal(t, st.Module, info.Module)
	// The ledger's Evolve changed, under snapshot version b: a's snapshot
	// is ignored, the stream folded whole, and b's kept (every 5 events).
	require.Zero(t, decide(ten, "B", 1), "a snapshot of another fold is not read")
	require.Equal(t, int64(24), decide(ten, "B", 1), "the command before kept b's snapshot in place of a's")
	require.Equal(t, int64(1), snapshots(ten))
	require.NoError(t, h.Close())

	// v2 with its applied migration edited: reported, not run again.
	h = deploy("v2changed")
	ten = h.Client().Tenant(tenant)
	st = status(ten)
	require.Len(t, st.MigrationDrift, 1)
	require.Contains(t, st.MigrationDrift[0], "migration 2_tags of the module's own tables changed after it was applied")
	n, err = note(ten, "drifted")
	require.NoError(t, err, "the tenant serves on")
	require.Equal(t, int64(3), n)
	require.Equal(t, int64(24), decide(ten, "B", 1), "another build of the same snapshot version reads its snapshots")
	require.NoError(t, h.Close())

	// Back to v1, over the added column: it serves, and says what is ahead.
	h = deploy("v1")
	ten = h.Client().Tenant(tenant)
	n, err = note(ten, "third")
	require.NoError(t, err)
	require.Equal(t, int64(4), n)
	st = status(ten)
	require.Equal(t, []api.MigrationAhead{{Version: 2, Name: "tags", Class: "additive"}}, st.ModuleSchema.Ahead)
	require.Zero(t, decide(ten, "A", 1), "rolled back, the ledger folds by a again: b's snapshot is not read")
	require.Equal(t, int64(30), decide(ten, "A", 1))
	require.NoError(t, h.Close())

	// v3 drops the column (destructive, and says so); back to v2 over it,
	// registered transactions answer 503; the rest serves.
	h = deploy("v3")
	n, err = note(h.Tenant(tenant), "fourth")
	require.NoError(t, err)
	require.Equal(t, int64(5), n)
	// v3's ledger keeps no snapshots: it folds the stream whole, and
	// leaves the kept snapshot as it is.
	require.Zero(t, decide(h.Tenant(tenant), "A", 1))
	require.Zero(t, decide(h.Tenant(tenant), "A", 10))
	require.Equal(t, int64(1), snapshots(h.Tenant(tenant)))
	require.NoError(t, h.Close())
	h = deploy("v2")
	ten = h.Client().Tenant(tenant)
	_, err = note(ten, "fifth")
	requireCode(t, err, http.StatusServiceUnavailable, api.CodeSchemaAhead)
	require.ErrorContains(t, err, "3_untag is destructive")
	_, err = ten.Enqueue(ctx, api.EnqueueRequest{Kind: "mail.send"})
	require.NoError(t, err)
	require.Zero(t, decide(ten, "B", 1), "the snapshot v3 left is a's, behind the events v3 appended: not read")
	require.Equal(t, int64(47), decide(ten, "B", 1))
	require.NoError(t, h.Close())
}

// TestAnAlarmLeavesTheUpgradeReportToARequest: when an alarm is the first
// call of a new module (a job came due across the deploy), the migrations
// its start applied are still reported by the first request's answer: an
// alarm's answer reaches no one.
func TestAnAlarmLeavesTheUpgradeReportToARequest(t *testing.T) {
	t.Parallel()
	dir, ctx := t.TempDir(), context.Background()
	h := stiletest.New(t, stiletest.Config{App: upgrade.App("v1"), DataDir: dir, Token: token})
	at := h.Now().Add(time.Second)
	_, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "mail.send", RunAt: &at})
	require.NoError(t, err)
	require.NoError(t, h.Close())

	h = stiletest.New(t, stiletest.Config{App: upgrade.App("v2"), DataDir: dir, Token: token, Now: at})
	require.Equal(t, 1, h.Advance(0), "the due job's alarm is the new module's first call")
	st, err := h.Client().Tenant("acme").Status(ctx)
	require.NoError(t, err)
	require.Equal(t, api.SchemaState{Version: 2, Known: 2, Applied: 1}, st.ModuleSchema)
}
