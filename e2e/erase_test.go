package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"
	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/schema"
	"github.com/stile-run/stile/stiletest"
)

// scenarioErase: erasing needs the tenant's name repeated; it drops every
// row, clears the alarm, leaves the directory, and every later request,
// even a malformed one, is 410.
func scenarioErase(s *scenario) {
	t := s.t
	name := s.ten.Name()
	later := s.enqueue(api.EnqueueRequest{Kind: "test.echo", RunAt: ptrTime(s.now().Add(day))})
	s.createPayment("p1", 10)
	path := "/v1/t/" + name
	for query, msg := range map[string]string{
		"":                              "repeat its name, ?confirm=" + name,
		"?confirm=other":                "repeat its name",
		"?confirm=" + name + "&force=1": `unknown query parameter "force"`,
	} {
		status, out, err := s.tg.client().Raw(s.ctx, "DELETE", path+query, nil, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, status, "%q: %s", query, out)
		var e api.Error
		require.NoError(t, json.Unmarshal(out, &e))
		require.Contains(t, e.Message, msg)
	}
	require.Equal(t, "scheduled", string(s.job(later.ID).State), "a refused erasure changed nothing")

	status, out, err := s.tg.client().Raw(s.ctx, "DELETE", path+"?confirm="+name, nil, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, string(out))
	var erased api.Erased
	require.NoError(t, json.Unmarshal(out, &erased))
	require.Equal(t, name, erased.Tenant)
	require.Greater(t, erased.Dropped, 20, "Stile's tables, triggers and the module's")

	for _, r := range []struct{ method, path, body string }{
		{"GET", "/status", ""}, {"POST", "/jobs", `{"kind":"test.echo"}`}, {"POST", "/jobs", `{not json`},
		{"GET", "/jobs/" + later.ID, ""}, {"DELETE", "?confirm=" + name, ""},
	} {
		status, out, err := s.tg.client().Raw(s.ctx, r.method, path+r.path, []byte(r.body), nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusGone, status, "%s %s: %s", r.method, r.path, out)
		var e api.Error
		require.NoError(t, json.Unmarshal(out, &e))
		require.Equal(t, api.CodeErased, e.Code)
		require.Contains(t, e.Message, "tenant "+name+" was erased at ")
	}
	page, err := s.tg.client().Tenants(s.ctx, api.TenantsQuery{After: name[:len(name)-1], Limit: 1000})
	require.NoError(t, err)
	for _, ti := range page.Tenants {
		require.NotEqual(t, name, ti.Name, "the directory forgot the tenant")
	}
	if p := s.tg.inProcess(); p != nil {
		require.Zero(t, p.manager.AlarmAt(name), "the alarm is cleared")
	}
}

// An erased tenant stays erased when its host starts again: a new
// instance reads the tombstone before anything else, and migrates nothing.
func TestErasedStaysErased(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]stiletest.Config{
		"native": {App: testapp.App()},
		"wazero": {Package: testTenant},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg.DataDir, cfg.Token = t.TempDir(), token
			h := stiletest.New(t, cfg)
			_, err := h.Tenant("gone").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
			require.NoError(t, err)
			status, out, err := h.Client().Raw(ctx, "DELETE", "/v1/t/gone?confirm=gone", nil, nil)
			require.NoError(t, err)
			require.Equal(t, 200, status, string(out))
			require.NoError(t, h.Close())

			h = stiletest.New(t, cfg)
			_, err = h.Client().Tenant("gone").Status(ctx)
			requireCode(t, err, http.StatusGone, api.CodeErased)
			page, err := h.Client().Tenants(ctx, api.TenantsQuery{})
			require.NoError(t, err)
			require.Empty(t, page.Tenants)
		})
	}
}

// Erasing works whatever state the tenant's migrations are in: a tenant
// whose Stile migration failed serves only GET /status and POST
// /migrations, yet its erasure goes through. It used to answer 503.
func TestEraseWorksWhateverTheMigrationState(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]stiletest.Config{
		"native": {App: testapp.App()},
		"wazero": {Package: testTenant},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg.DataDir, cfg.Token = t.TempDir(), token
			h := stiletest.New(t, cfg)
			_, err := h.Tenant("stuck").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
			require.NoError(t, err)
			require.NoError(t, h.Close())

			// The ledger forgets the last migration, which then fails when
			// applied again (its column is there).
			db, err := sqlite3.Open(filepath.Join(cfg.DataDir, "tenants", "stuck.sqlite"))
			require.NoError(t, err)
			require.NoError(t, db.Exec(`DELETE FROM `+schema.Ledger+` WHERE version = `+strconv.Itoa(len(schema.Migrations()))))
			require.NoError(t, db.Close())

			h = stiletest.New(t, cfg)
			st, err := h.Client().Tenant("stuck").Status(ctx)
			require.NoError(t, err)
			require.NotNil(t, st.StileSchema.Failed, "Stile's last migration failed")
			_, err = h.Client().Tenant("stuck").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
			requireCode(t, err, http.StatusServiceUnavailable, api.CodeMigrationFailed)
			erased, err := h.Client().Tenant("stuck").Erase(ctx)
			require.NoError(t, err, "erasure needs no migration")
			require.Equal(t, "stuck", erased.Tenant)
			_, err = h.Client().Tenant("stuck").Status(ctx)
			requireCode(t, err, http.StatusGone, api.CodeErased)
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// now is the target's time: its controlled clock, or the wall clock.
func (s *scenario) now() time.Time {
	if p := s.tg.inProcess(); p != nil {
		return time.UnixMilli(p.clock.Now())
	}
	return time.Now()
}

// An erasure leaves nothing of the tenant's data on the disk: not in the
// database's freed pages, not in its write-ahead log, not in the alarm
// schedule or the directory. The data stayed in the log and the free
// pages, and the directory named the tenant until its next compaction.
func TestEraseLeavesNoByteOnDisk(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]stiletest.Config{
		"native": {App: testapp.App()},
		"wazero": {Package: testTenant},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg.DataDir, cfg.Token = t.TempDir(), token
			h := stiletest.New(t, cfg)
			const marker = "marker-5f3a9c-erase-me"
			ten := h.Tenant("wiped")
			for range 20 {
				_, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"secret":"` + marker + `"}`)})
				require.NoError(t, err)
			}
			at := h.Now().Add(time.Hour)
			_, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", RunAt: &at, Args: json.RawMessage(`{"secret":"` + marker + `"}`)})
			require.NoError(t, err)
			_, err = h.Tenant("kept").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
			require.NoError(t, err)
			require.NotEmpty(t, filesHolding(t, cfg.DataDir, marker), "the marker is on the disk before the erasure")

			_, err = ten.Erase(ctx)
			require.NoError(t, err)
			require.Empty(t, filesHolding(t, cfg.DataDir, marker), "the erasure left the tenant's data on the disk")
			page, err := h.Client().Tenants(ctx, api.TenantsQuery{})
			require.NoError(t, err)
			require.Equal(t, []string{"kept"}, tenantNames(page), "the directory forgot the tenant at once")
			for _, f := range []string{"alarms.json", "directory.json", "directory.journal"} {
				b, _ := os.ReadFile(filepath.Join(cfg.DataDir, f))
				require.NotContains(t, string(b), "wiped", f)
			}
			_, err = ten.Status(ctx)
			requireCode(t, err, http.StatusGone, api.CodeErased)

			// Still erased, and still clean, after a restart.
			require.NoError(t, h.Close())
			h = stiletest.New(t, cfg)
			_, err = h.Client().Tenant("wiped").Status(ctx)
			requireCode(t, err, http.StatusGone, api.CodeErased)
			require.NoError(t, h.Close())
			require.Empty(t, filesHolding(t, cfg.DataDir, marker))
		})
	}
}

// filesHolding lists the files under dir whose bytes contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, path)
		}
		return nil
	}))
	return out
}

func tenantNames(page api.TenantsResponse) []string {
	out := []string{}
	for _, ti := range page.Tenants {
		out = append(out, ti.Name)
	}
	return out
}
