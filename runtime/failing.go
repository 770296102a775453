package runtime

import (
	"slices"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// errorShape is an error as the failing view groups it: runs of digits
// made #, cut to a line of 200 bytes, so that errors that differ only by
// an id or a time count as one.
func errorShape(msg string) string {
	var b strings.Builder
	digits := false
	for _, c := range oneLine(msg) {
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(c)
		if b.Len() >= 200 {
			break
		}
	}
	return b.String()
}

// failing answers GET /failing: what is failing in the tenant now.
func (t *Tenant) failing() route {
	return func(now int64) (result, error) {
		jobs, more, err := t.store.Failing(api.MaxFailingScan)
		if err != nil {
			return result{}, err
		}
		resp := api.FailingResponse{Jobs: []api.FailingJobs{}, Reactions: []api.FailingReaction{}, Projections: []api.FailingProjection{}, Truncated: more}
		at := map[[3]string]int{}
		for _, j := range jobs { // newest first
			key := [3]string{j.Kind, string(j.State), errorShape(j.LastError)}
			i, ok := at[key]
			if !ok {
				i = len(resp.Jobs)
				at[key] = i
				resp.Jobs = append(resp.Jobs, api.FailingJobs{Kind: j.Kind, State: j.State, Error: key[2], Example: oneLine(j.LastError),
					LastAt: ts(j.At), FirstAt: ts(j.At), LatestJob: fmtID(j.ID)})
			}
			g := &resp.Jobs[i]
			g.Count++
			if t := ts(j.At); t.Before(g.FirstAt) {
				g.FirstAt = t
			}
		}
		slices.SortStableFunc(resp.Jobs, func(a, b api.FailingJobs) int { return int(b.Count - a.Count) })
		for _, rc := range t.app.reactions {
			st, err := t.reactions.Status(rc.h, 1, api.MaxOpenShown)
			if err != nil {
				return result{}, err
			}
			var f api.FailingReaction
			for _, e := range st.Open {
				if e.Failures > 0 {
					if f.Failing == 0 {
						f = api.FailingReaction{Name: rc.h.Name, Seq: e.Seq, Error: oneLine(e.Error)}
					}
					f.Failing++
				}
			}
			if f.Failing > 0 {
				resp.Reactions = append(resp.Reactions, f)
			}
		}
		gens, err := t.projections.All()
		if err != nil {
			return result{}, err
		}
		for _, g := range gens {
			if g.Role == projectionstore.Live && g.Stalled() {
				resp.Projections = append(resp.Projections, api.FailingProjection{Name: g.Name, ErrorSeq: g.ErrorSeq, Error: oneLine(g.Error)})
			}
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}
