package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/stiletest"
)

// The alarm schedule and the tenant directory are the host's records
// beside the tenants' files. A torn or missing record is rebuilt from the
// tenants when the host starts: it used to refuse to start (a torn
// alarms.json), and deleting the file as the refusal advised left idle
// tenants without their alarms.
func TestLostHostRecordsAreRebuiltFromTheTenants(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func(t *testing.T, dir string){
		"torn alarms": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "alarms.json"), []byte(`{"acme":17`), 0o644))
		},
		"missing alarms": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "alarms.json")))
		},
		"unreadable directory": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "directory.json"), []byte(`{"seq":3,"tenants":[{"na`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "directory.journal"), []byte("{not json\n{\"seq\":9,\"entry\":{\"na"), 0o644))
		},
		"missing directory": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "directory.json")))
		},
		"everything torn": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "alarms.json"), []byte(`{"ac`), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "directory.json"), []byte(`{"seq"`), 0o644))
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			h := newHarness(t, stiletest.Config{DataDir: dir})
			m := h.Manager()
			at := h.Now().Add(10 * time.Second)
			resp := call(t, m, "acme", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo", RunAt: &at})
			require.Equal(t, 201, resp.Status)
			require.Equal(t, 201, call(t, m, "other", "POST", "jobs", api.EnqueueRequest{Kind: "test.echo"}).Status)
			require.NoError(t, h.Close())
			damage(t, dir)

			h2 := newHarness(t, stiletest.Config{DataDir: dir, Now: h.Now()})
			m2 := h2.Manager()
			require.Eventually(t, func() bool { return m2.AlarmAt("acme") == at.UnixMilli() },
				time.Minute, 10*time.Millisecond, "the idle tenant's alarm is back, without a request of its own")
			require.Eventually(t, func() bool {
				page, err := m2.Directory().List(context.Background(), api.TenantsQuery{})
				require.NoError(t, err)
				return len(page.Tenants) == 2
			}, time.Minute, 10*time.Millisecond, "the directory lists both tenants")
			require.Equal(t, 1, h2.Advance(10*time.Second), "the alarm fires")
			require.Zero(t, m2.AlarmAt("acme"))

			// The records are whole again: a third start reads them.
			require.NoError(t, h2.Close())
			h3 := newHarness(t, stiletest.Config{DataDir: dir, Now: h2.Now()})
			page, err := h3.Manager().Directory().List(context.Background(), api.TenantsQuery{})
			require.NoError(t, err)
			require.Len(t, page.Tenants, 2)
		})
	}
}
