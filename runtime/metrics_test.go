package runtime

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

func kc(kind, state string, n int64) fencestore.KindCount {
	return fencestore.KindCount{Kind: kind, State: state, Count: n}
}

// Past the cap, the kinds with the fewest jobs (ties: the later name)
// are counted as other, per state; under it nothing changes.
func TestCapKinds(t *testing.T) {
	t.Parallel()
	counts := []fencestore.KindCount{kc("a", "available", 1), kc("b", "available", 5), kc("b", "dead", 1), kc("c", "available", 2), kc("d", "dead", 2)}
	require.Equal(t, counts, capKinds(counts, 4))
	require.Equal(t, []fencestore.KindCount{kc("b", "available", 5), kc("b", "dead", 1), kc("c", "available", 2),
		kc(api.OtherMetricKind, "available", 1), kc(api.OtherMetricKind, "dead", 2)}, capKinds(counts, 2))
	var many []fencestore.KindCount
	for i := range api.MaxMetricKinds + 5 {
		many = append(many, fencestore.KindCount{Kind: "k" + strconv.Itoa(1000+i), State: "available", Count: 1})
	}
	capped := capKinds(many, api.MaxMetricKinds)
	require.Len(t, capped, api.MaxMetricKinds+1)
	require.Equal(t, fencestore.KindCount{Kind: api.OtherMetricKind, State: "available", Count: 5}, capped[api.MaxMetricKinds])
}

// The text format: one HELP and TYPE per family, then its samples, label
// values escaped.
func TestMetricsText(t *testing.T) {
	t.Parallel()
	m := tenantMetrics{tenant: `acme"\` + "\n", jobs: []fencestore.KindCount{kc("email.send", "dead", 3)},
		reactions:   []reactionFigures{{name: "audit", lag: 4, open: 2, failing: 1, paused: true}},
		projections: []projectionFigures{{name: "notes", lag: 1, stalled: true}}, today: api.Usage{Requests: 7}}
	out := string(m.appendText(nil))
	lbl := `{tenant="acme\"\\\n"`
	for _, line := range []string{
		"# HELP stile_jobs ", "# TYPE stile_jobs gauge\nstile_jobs" + lbl + `,kind="email.send",state="dead"} 3`,
		"stile_reaction_lag_events" + lbl + `,reaction="audit"} 4`, "stile_reaction_failing_deliveries" + lbl + `,reaction="audit"} 1`,
		"stile_reaction_paused" + lbl + `,reaction="audit"} 1`, "stile_reaction_replaying" + lbl + `,reaction="audit"} 0`,
		"stile_projection_stalled" + lbl + `,projection="notes"} 1`, "stile_tenant_requests_today" + lbl + "} 7",
	} {
		require.Contains(t, out, line)
	}
	require.Equal(t, 1, strings.Count(out, "# TYPE stile_reaction_lag_events "))
	require.True(t, strings.HasSuffix(out, "\n"))
}
