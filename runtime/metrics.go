package runtime

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"

	"github.com/stile-run/stile/runtime/internal/fencestore"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// GET /metrics: the tenant's own figures in the Prometheus text format,
// read from its storage when asked, so every host answers them alike and
// a reader of one tenant sees nothing of another's.

// tenantMetrics are the figures of one tenant's GET /metrics.
type tenantMetrics struct {
	tenant      string
	jobs        []fencestore.KindCount // kinds capped (capKinds)
	reactions   []reactionFigures
	projections []projectionFigures
	today       api.Usage
}

type reactionFigures struct {
	name               string
	lag, open, failing int64
	paused, replaying  bool
}

type projectionFigures struct {
	name    string
	lag     int64
	stalled bool
}

func (t *Tenant) metrics() route {
	return func(now int64) (result, error) {
		m := tenantMetrics{tenant: t.name, today: t.today(now)}
		jobs, err := t.store.CountsByKind()
		if err != nil {
			return result{}, err
		}
		m.jobs = capKinds(jobs, api.MaxMetricKinds)
		paused, err := t.reactions.Paused()
		if err != nil {
			return result{}, err
		}
		replaying, err := t.reactions.Replaying()
		if err != nil {
			return result{}, err
		}
		for _, rc := range t.app.reactions {
			st, err := t.reactions.Status(rc.h, api.MaxLagCount, api.MaxOpenShown)
			if err != nil {
				return result{}, err
			}
			_, replay := replaying[rc.h.Name]
			r := reactionFigures{name: rc.h.Name, lag: st.Lag, open: int64(len(st.Open)), paused: paused[rc.h.Name], replaying: replay}
			r.failing, _ = failingOpen(st.Open)
			m.reactions = append(m.reactions, r)
		}
		gens, err := t.projections.All()
		if err != nil {
			return result{}, err
		}
		for _, p := range t.app.projections {
			for _, g := range gens {
				if g.Name != p.Name || g.Role != projectionstore.Live {
					continue
				}
				gs, err := t.generationStatus(p, g, now)
				if err != nil {
					return result{}, err
				}
				m.projections = append(m.projections, projectionFigures{name: p.Name, lag: gs.Lag, stalled: gs.Status == "stalled"})
			}
		}
		return result{status: statusOK, body: m.appendText,
			headers: do.Headers{{Name: "content-type", Value: api.MetricsContentType}}}, nil
	}
}

// capKinds keeps the max kinds with the most jobs (ties by name) and
// counts the others' jobs, per state, as api.OtherMetricKind. counts is in
// kind order; so is the answer, other last.
func capKinds(counts []fencestore.KindCount, max int) []fencestore.KindCount {
	totals := map[string]int64{}
	for _, c := range counts {
		totals[c.Kind] += c.Count
	}
	if len(totals) <= max {
		return counts
	}
	kinds := make([]string, 0, len(totals))
	for k := range totals {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		return cmp.Or(cmp.Compare(totals[b], totals[a]), strings.Compare(a, b))
	})
	kept := make(map[string]bool, max)
	for _, k := range kinds[:max] {
		kept[k] = true
	}
	var out []fencestore.KindCount
	other := map[string]int64{}
	for _, c := range counts {
		if kept[c.Kind] {
			out = append(out, c)
		} else {
			other[c.State] += c.Count
		}
	}
	for _, st := range slices.Sorted(maps.Keys(other)) {
		out = append(out, fencestore.KindCount{Kind: api.OtherMetricKind, State: st, Count: other[st]})
	}
	return out
}

// appendText appends m in the Prometheus text exposition format (0.0.4).
func (m tenantMetrics) appendText(b []byte) []byte {
	family := func(name, typ, help string) {
		b = append(b, "# HELP "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, help...)
		b = append(b, "\n# TYPE "...)
		b = append(b, name...)
		b = append(b, ' ')
		b = append(b, typ...)
		b = append(b, '\n')
	}
	sample := func(name string, v int64, labels ...string) {
		b = append(b, name...)
		b = append(b, `{tenant="`...)
		b = appendLabel(b, m.tenant)
		b = append(b, '"')
		for i := 0; i+1 < len(labels); i += 2 {
			b = append(b, ',')
			b = append(b, labels[i]...)
			b = append(b, `="`...)
			b = appendLabel(b, labels[i+1])
			b = append(b, '"')
		}
		b = append(b, "} "...)
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	flag := func(on bool) int64 {
		if on {
			return 1
		}
		return 0
	}
	family("stile_jobs", "gauge", "Jobs by kind and state (kinds past the 100 with the most jobs are counted as other).")
	for _, c := range m.jobs {
		sample("stile_jobs", c.Count, "kind", c.Kind, "state", c.State)
	}
	family("stile_reaction_lag_events", "gauge", "Events a reaction has still to be handed (counted up to 100000).")
	for _, r := range m.reactions {
		sample("stile_reaction_lag_events", r.lag, "reaction", r.name)
	}
	family("stile_reaction_open_deliveries", "gauge", "Deliveries of a reaction claimed or failed and not settled (the first 20).")
	for _, r := range m.reactions {
		sample("stile_reaction_open_deliveries", r.open, "reaction", r.name)
	}
	family("stile_reaction_failing_deliveries", "gauge", "Open deliveries of a reaction that failed at least once (of the first 20).")
	for _, r := range m.reactions {
		sample("stile_reaction_failing_deliveries", r.failing, "reaction", r.name)
	}
	family("stile_reaction_paused", "gauge", "1 if an operator paused the reaction.")
	for _, r := range m.reactions {
		sample("stile_reaction_paused", flag(r.paused), "reaction", r.name)
	}
	family("stile_reaction_replaying", "gauge", "1 while a replay of the reaction runs.")
	for _, r := range m.reactions {
		sample("stile_reaction_replaying", flag(r.replaying), "reaction", r.name)
	}
	family("stile_projection_lag_events", "gauge", "Events a projection's live generation has still to apply (counted up to 100000).")
	for _, p := range m.projections {
		sample("stile_projection_lag_events", p.lag, "projection", p.name)
	}
	family("stile_projection_stalled", "gauge", "1 if a projection's live generation is stalled on an event.")
	for _, p := range m.projections {
		sample("stile_projection_stalled", flag(p.stalled), "projection", p.name)
	}
	for _, u := range []struct {
		name, help string
		v          int64
	}{
		{"stile_tenant_requests_today", "Requests the tenant served this UTC day.", m.today.Requests},
		{"stile_tenant_alarms_today", "Alarms the tenant ran this UTC day.", m.today.Alarms},
		{"stile_tenant_rows_read_today", "Storage rows the tenant read this UTC day.", m.today.RowsRead},
		{"stile_tenant_rows_written_today", "Storage rows the tenant wrote this UTC day.", m.today.RowsWritten},
		{"stile_tenant_module_microseconds_today", "Time the tenant's calls spent in its module this UTC day.", m.today.ModuleMicros},
		{"stile_tenant_pushes_today", "Pushes to executors the tenant made this UTC day.", m.today.Pushes},
	} {
		family(u.name, "gauge", u.help)
		sample(u.name, u.v)
	}
	return b
}

// appendLabel appends a label value escaped as the text format wants:
// backslash, double quote and line feed.
func appendLabel(b []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
