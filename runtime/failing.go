package runtime

import (
	"slices"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
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
		resp, err := t.failingNow()
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

// failingNow reads what is failing in the tenant now: the newest
// MaxFailingScan jobs of each failing state along their index, the open
// deliveries of each reaction, the projections' generations.
func (t *Tenant) failingNow() (api.FailingResponse, error) {
	jobs, more, err := t.store.Failing(api.MaxFailingScan)
	if err != nil {
		return api.FailingResponse{}, err
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
			return api.FailingResponse{}, err
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
		return api.FailingResponse{}, err
	}
	for _, g := range gens {
		if g.Role == projectionstore.Live && g.Stalled() {
			resp.Projections = append(resp.Projections, api.FailingProjection{Name: g.Name, ErrorSeq: g.ErrorSeq, Error: oneLine(g.Error)})
		}
	}
	return resp, nil
}

// What the directory hears of what is failing (api.FailingNote): a commit
// that may have changed it (a job became or stopped being retryable or
// dead, a delivery failed or settled after failing, a projection stalled
// or recovered) marks it changed; the alarm looks again
// api.FailingNoteDelay later, at most every api.FailingNoteEvery, and the
// response tells the directory (the stile-failing header) when what it
// found differs from what the directory was last told (a setting, so a
// new instance does not tell it again).

// failWatch is what the tenant knows of what the directory was told.
type failWatch struct {
	// changedAt is when a commit first changed what may be failing since
	// the last look (0: nothing changed); lookedAt when it last looked.
	changedAt, lookedAt int64
	// note is the note the response tells the directory ("": none).
	note string
}

// settingFailing keeps the note the directory was last told.
const settingFailing = "directory_failing"

// changed notes at now that what is failing may have changed.
func (f *failWatch) changed(now int64) {
	if f.changedAt == 0 {
		f.changedAt = now
	}
}

// due is when the tenant looks again at what is failing (0: no need).
func (f *failWatch) due() int64 {
	if f.changedAt == 0 {
		return 0
	}
	return max(f.changedAt+api.FailingNoteDelay.Milliseconds(), f.lookedAt+api.FailingNoteEvery.Milliseconds())
}

// lookAtFailing is the alarm's look at what is failing, when it is due: a
// note for the directory when it differs from the last it was told.
func (t *Tenant) lookAtFailing(now int64) error {
	if due := t.fail.due(); due == 0 || now < due || t.name == "" {
		return nil
	}
	t.fail.changedAt, t.fail.lookedAt = 0, now
	var note string
	err := t.db.Tx(func() error {
		f, err := t.failingNow()
		if err != nil {
			return err
		}
		n := api.NoteOfFailing(t.name, f)
		told, _, err := t.setting(settingFailing)
		note = string(n.AppendJSON(nil))
		if err != nil || told == note || told == "" && len(n.Groups) == 0 && n.More == 0 {
			note = ""
			return err
		}
		return t.setSetting(now, settingFailing, note)
	})
	if err != nil {
		t.fail.changed(now) // looked at again with the alarm's retry
		return printf.Errorf("look at what is failing: %w", err)
	}
	t.fail.note = note
	return nil
}

// changesFailing says whether a committed request of route may change
// what is failing beyond what the stores report: a projection rebuilt, a
// reaction paused or resumed, migrations, an import.
func changesFailing(r api.Route) bool {
	switch r {
	case api.RouteRebuild, api.RouteSkip, api.RoutePauseReaction, api.RouteMigrate, api.RouteImport:
		return true
	}
	return false
}
