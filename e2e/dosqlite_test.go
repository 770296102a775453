package e2e_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/host/workerd"
)

// TestDurableObjectSQLiteUnchanged measures Durable Object SQLite again in
// the installed workerd (e2e/dosqlite/measure.mjs) and requires the same
// outcome and message for every SQL probe as the committed measured.json,
// which host/dosql's parity test holds the local host to. When workerd
// changes (a Miniflare upgrade), this fails first: re-measure, commit, and
// let the parity test show what the local host must change.
func TestDurableObjectSQLiteUnchanged(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	nodeDir, err := workerd.EnsureInstalled()
	if errors.Is(err, workerd.ErrNoNode) {
		if ci() {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	} else {
		require.NoError(t, err)
	}
	cmd := exec.Command("node", filepath.Join("e2e", "dosqlite", "measure.mjs"))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "STILE_NODE_DIR="+nodeDir)
	out, err := cmd.Output()
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join(root, "e2e", "dosqlite", "measured.json"))
	require.NoError(t, err)
	now, then := sqlOutcomes(t, out), sqlOutcomes(t, committed)
	require.Greater(t, len(then), 500)
	require.Equal(t, then, now, "workerd's SQLite no longer behaves as e2e/dosqlite/measured.json says")
}

// sqlOutcomes lists "group/index sql => ok | error message" for every SQL
// probe of a measurement.
func sqlOutcomes(t *testing.T, b []byte) []string {
	var m struct {
		Groups map[string]struct {
			Probes []struct {
				SQL   *string `json:"sql"`
				OK    bool    `json:"ok"`
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"probes"`
		} `json:"groups"`
	}
	require.NoError(t, json.Unmarshal(b, &m))
	var out []string
	for _, g := range []string{"transactions", "pragmas", "errors", "features", "limits", "values"} {
		for i, p := range m.Groups[g].Probes {
			if p.SQL == nil {
				continue
			}
			res := "ok"
			if !p.OK && p.Error != nil {
				res = p.Error.Message
			}
			out = append(out, fmt.Sprintf("%s/%d %s => %s", g, i, *p.SQL, res))
		}
	}
	return out
}
