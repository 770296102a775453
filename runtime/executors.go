package runtime

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/flow"
	"github.com/stile-run/stile/internal/printf"
)

// claimsSeen is what the job claims of executors and workers named since
// this instance started: the kinds someone handles. A ready job of a kind
// no claim named, while claims come, waits for an executor that may never
// exist (a handler package that forgot a kind, a typo in a registration):
// GET /queues and GET /jobs/{id} say so. It is kept in memory, and is
// empty on a new instance until the first claim.
type claimsSeen struct {
	since int64 // the first claim (0: none yet)
	every bool  // a claim named no kinds: it takes every kind
	kinds map[string]bool
}

// note records a claim naming kinds (none: every kind). Claims name only
// kinds the module registers, so the map stays as small as the module.
func (c *claimsSeen) note(now int64, kinds []string) {
	if c.since == 0 {
		c.since = now
	}
	if len(kinds) == 0 {
		c.every = true
		return
	}
	if c.kinds == nil {
		c.kinds = map[string]bool{}
	}
	for _, k := range kinds {
		c.kinds[k] = true
	}
}

// unhandled reports whether claims came and none named kind.
func (c *claimsSeen) unhandled(kind string) bool {
	return c.since != 0 && !c.every && !c.kinds[kind]
}

// why says in one line that no executor handles kind.
func (c *claimsSeen) why(kind string) string {
	named := slices.Sorted(maps.Keys(c.kinds))
	return printf.Sprintf("no executor handles kind %q: the executors that claimed since this tenant's instance started take %s; register a handler for it",
		kind, strings.Join(named, ", "))
}

// waiting says why a ready job is not running, when the tenant knows: its
// queue is paused, its rate key is at its limit (until when), or no
// executor handles its kind; or why a debounced job has not started yet;
// "" otherwise.
func (t *Tenant) waiting(now int64, j api.Job) (string, error) {
	if fence.State(j.State) == fence.StateScheduled && j.DebounceKey != "" && j.Attempt == 0 {
		return printf.Sprintf("debounced by key %q: runs at %s, or later if another enqueue of the key comes before (within its max wait, if it has one); %d enqueues collapsed (keep %s)",
			j.DebounceKey, j.RunAt.Format(time.RFC3339Nano), j.Collapsed, j.Keep), nil
	}
	if fence.State(j.State) != fence.StateAvailable {
		return "", nil
	}
	paused, err := t.store.PausedQueues()
	if err != nil {
		return "", err
	}
	if paused[j.Queue] {
		return printf.Sprintf("its queue %q is paused: claims take nothing from it until PUT /v1/t/%s/queues/%s resumes it", j.Queue, t.name, j.Queue), nil
	}
	if j.RateKey != "" {
		r, ok, err := t.store.GetRate(j.RateKey)
		if err != nil {
			return "", err
		}
		if open := flow.Next(r.Window, r.Rate, now); ok && open > now {
			return printf.Sprintf("rate limited by key %q (%d starts per %d ms) until %s", j.RateKey, r.Limit, r.PeriodMs,
				ts(open).Format(time.RFC3339Nano)), nil
		}
	}
	if t.executors.claims.unhandled(j.Kind) {
		return t.executors.claims.why(j.Kind), nil
	}
	return "", nil
}
