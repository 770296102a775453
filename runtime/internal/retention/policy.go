// Package retention decides what a tenant may delete and when to look
// again (policy.go, pure), and deletes it in bounded slices (purge.go).
// Events are never deleted; nor is anything live.
package retention

import "github.com/stile-run/stile/api"

// Effective is the policy in force: the tenant's overrides (the fields in
// set) over the module's.
func Effective(module, tenant api.Retention, set api.RetentionFields) api.Retention {
	out := module
	o, t := out.Values(), tenant.Values()
	for i := range o {
		if set.Has(api.RetentionFields(1) << i) {
			*o[i] = *t[i]
		}
	}
	return out
}

// Overridden names the fields in set.
func Overridden(set api.RetentionFields) []string {
	out := []string{}
	for i, name := range api.RetentionNames {
		if set.Has(api.RetentionFields(1) << i) {
			out = append(out, name)
		}
	}
	return out
}

// Slack is the shortest time between two looks that deleted less than a
// slice: a twenty-fourth of the shortest window, within a second and an
// hour. Under a steady flow the oldest row comes due every few moments;
// looking at each would be an alarm per row. And a row kept past its
// window (a unique window, an unfinished dependent) stays the oldest for a
// while: it must not make the alarm spin. So a row goes up to a slack
// after its window: a completed job kept a day goes within 25 hours.
func Slack(p api.Retention) int64 {
	shortest := int64(0)
	for _, w := range p.Values() {
		if *w != 0 && (shortest == 0 || *w < shortest) {
			shortest = *w
		}
	}
	return min(max(shortest/24, 1000), 3600_000)
}

// Slice bounds the rows of each kind one look deletes, so that no request
// waits long behind a purge (the object serializes them with the alarm).
const Slice = 256

// Kind is a kind of row retention deletes; Oldest and the windows are
// indexed by it.
type Kind int

// The kinds, in the order of api.RetentionNames.
const (
	Completed Kind = iota
	Cancelled
	Dead
	Deliveries
	Commands
	Audit
	kinds
)

// Oldest holds each kind's oldest end time (finished, settled, applied,
// recorded; 0: none).
type Oldest [kinds]int64

// Cutoff is the end time at or before which rows of kind k may go at
// now, and false when the policy keeps them forever.
func Cutoff(p api.Retention, k Kind, now int64) (int64, bool) {
	w := *p.Values()[k]
	if w == 0 {
		return 0, false
	}
	return now - w, true
}

// Next is when to look again after a look at now: at once when a slice
// was full, else when the oldest row of a kind comes due, but no sooner
// than Slack from now; 0 when nothing can come due until more is written
// (AfterWrite).
func Next(p api.Retention, oldest Oldest, full bool, now int64) int64 {
	if full {
		return now
	}
	at := int64(0)
	v := p.Values()
	for k, o := range oldest {
		if o == 0 || *v[k] == 0 {
			continue
		}
		if due := o + *v[k]; at == 0 || due < at {
			at = due
		}
	}
	if at == 0 {
		return 0
	}
	return max(at, now+Slack(p))
}

// Planned is when to look next, other than right after a look: when the
// oldest row of a kind comes due (at once if it is past), but no sooner
// than Slack after the last look (looked; 0: none known). A new instance
// plans its look so: the slack is counted from the last look, not from
// its start, or a tenant woken only by its alarm, in a new instance each
// time, would put its look off by a slack at every wake.
func Planned(p api.Retention, oldest Oldest, looked int64) int64 {
	at := Next(p, oldest, false, 0)
	if at == 0 || looked == 0 {
		return at
	}
	return max(at, looked+Slack(p))
}

// AfterWrite is when to look next after a write at now, given the look
// planned (due, not 0): a row written now may go once the shortest window
// (and the slack) has passed, which may be before due.
func AfterWrite(p api.Retention, due, now int64) int64 {
	slack := Slack(p)
	for _, w := range p.Values() {
		if *w != 0 && now+*w+slack < due {
			due = now + *w + slack
		}
	}
	return due
}
