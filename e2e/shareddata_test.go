package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/stiletest"
)

// TestInstancesShareTheModuleData: on Linux the module's data is mapped
// copy-on-write into every instance from one image, and instances stay
// apart: each tenant's writes (the Go runtime's and the module's own
// variables live in that data) reach only its own memory. Tenants opened,
// evicted and reopened one after another all serve their own jobs.
func TestInstancesShareTheModuleData(t *testing.T) {
	t.Parallel()
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: stiletest.BuildWasm(t, testTenant), Logger: quietLog, CacheDir: wazeroCache()})
	require.NoError(t, err)
	require.Equal(t, runtime.GOOS == "linux", f.SharedData())
	m := stiletest.New(t, stiletest.Config{Factory: f}).Manager()
	ctx := context.Background()
	for round := range 3 {
		for i := range 6 {
			name := fmt.Sprintf("shared-%d", i)
			body, _ := json.Marshal(api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
			resp, err := m.Do(ctx, name, do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/" + name + "/jobs", Body: body})
			require.NoError(t, err)
			require.Equal(t, 201, resp.Status, string(resp.Body))
			resp, err = m.Do(ctx, name, do.Request{Kind: do.KindAPI, Method: "GET", Path: "/v1/t/" + name + "/jobs", Query: "limit=100"})
			require.NoError(t, err)
			var list api.ListResponse
			require.NoError(t, json.Unmarshal(resp.Body, &list))
			require.Len(t, list.Jobs, round+1, "tenant %s holds only its own jobs", name)
			for _, j := range list.Jobs {
				require.JSONEq(t, fmt.Sprintf(`{"n":%d}`, i), string(j.Args))
			}
			if i%2 == 0 {
				require.True(t, m.Evict(name))
			}
		}
	}
}
