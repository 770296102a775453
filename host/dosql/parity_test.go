package dosql_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/dosql"
)

// measured is the shape of e2e/dosqlite/measured.json that this test reads.
type measured struct {
	Groups map[string]struct {
		Probes []probe `json:"probes"`
	} `json:"groups"`
}

type probe struct {
	ID     string          `json:"id"`
	Inner  *probe          `json:"inner"`
	SQL    *string         `json:"sql"`
	Params []any           `json:"params"`
	OK     bool            `json:"ok"`
	Bytes  json.RawMessage `json:"bytes"`
	Each   json.RawMessage `json:"bytesEach"`
	Count  int             `json:"count"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// knownDifferences are probes whose local outcome differs from workerd on
// purpose or for a reason outside SQL, each with the reason.
var knownDifferences = map[string]string{
	"pragmas/49 pragma":                "the local SQLite build lacks the deprecated default_cache_size pragma table",
	"pragmas/267 pragma-bool-spelling": "SQLite's authorizer passes '' and a missing value alike",
	"features/123 update-limit":        "UPDATE … LIMIT is not compiled into the local SQLite: stricter here",
	"features/124 update-limit":        "UPDATE … ORDER BY … LIMIT: as above",
	"features/125 update-limit":        "DELETE … LIMIT: as above",
	"limits/4 params-numbered":         "the measurement does not record the 100 values it bound",
}

// TestParityWithWorkerd replays every SQL probe measured in workerd (see
// e2e/dosqlite) against the local engine, group by group in one
// transaction each as a Durable Object request would, and requires the same
// success or the same error message.
func TestParityWithWorkerd(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../e2e/dosqlite/measured.json")
	require.NoError(t, err)
	var m measured
	require.NoError(t, json.Unmarshal(raw, &m))

	groups := []string{"transactions", "pragmas", "errors", "features", "limits"}
	replayed, mismatches := 0, []string{}
	for _, g := range groups {
		db, err := dosql.Open(":memory:")
		require.NoError(t, err)
		require.NoError(t, db.Begin())
		for i, p := range m.Groups[g].Probes {
			if p.Inner != nil { // a statement run inside transactionSync
				p = *p.Inner
			}
			if p.SQL == nil || p.Bytes != nil || p.Each != nil || !plainParams(p.Params) {
				continue // a JS action, or values the file does not hold
			}
			if p.Params == nil && p.Count > 0 { // n anonymous parameters
				for range p.Count {
					p.Params = append(p.Params, float64(1))
				}
			}
			key := fmt.Sprintf("%s/%d %s", g, i, p.ID)
			if _, known := knownDifferences[key]; known {
				continue
			}
			// Encoded without the guest's own 100-parameter check, so the
			// database's refusal is what gets compared.
			params := binary.AppendUvarint(nil, uint64(len(p.Params)))
			for _, a := range toArgs(p.Params) {
				params, err = do.AppendValue(params, a)
				require.NoError(t, err, key)
			}
			_, qerr := db.Query(*p.SQL, params)
			replayed++
			want := "ok"
			if !p.OK {
				want = p.Error.Message
			}
			got := "ok"
			if qerr != nil {
				got = qerr.Error()
			}
			if got != want {
				mismatches = append(mismatches, fmt.Sprintf("%s: %q\n\tworkerd: %s\n\tlocal:   %s", key, short(*p.SQL), want, got))
			}
		}
		require.NoError(t, db.Commit())
		require.NoError(t, db.Close())
	}
	t.Logf("replayed %d probes", replayed)
	require.Greater(t, replayed, 300)
	require.Empty(t, mismatches, "%d mismatches:\n%s", len(mismatches), strings.Join(mismatches, "\n"))
}

func plainParams(ps []any) bool {
	for _, p := range ps {
		switch p.(type) {
		case nil, string, float64:
		default:
			return false
		}
	}
	return true
}

func toArgs(ps []any) []any {
	out := make([]any, len(ps))
	for i, p := range ps {
		if f, ok := p.(float64); ok && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			out[i] = int64(f)
			continue
		}
		out[i] = p
	}
	return out
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
