package runtime

import (
	"slices"
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/inbox"
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
		if n, first := failingOpen(st.Open); n > 0 {
			resp.Reactions = append(resp.Reactions, api.FailingReaction{Name: rc.h.Name, Failing: n, Seq: first.Seq, Error: oneLine(first.Error)})
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

// failingOpen counts the open deliveries that failed at least once (a
// delay is no failure), and gives the first of them.
func failingOpen(open []inbox.Entry) (n int64, first inbox.Entry) {
	for _, e := range open {
		if e.Failures > 0 {
			if n == 0 {
				first = e
			}
			n++
		}
	}
	return n, first
}

// What the directory hears of what is failing (api.FailingNote): a commit
// that may have changed it (a job became or stopped being retryable or
// dead, a delivery failed or settled after failing, a projection stalled
// or recovered) marks it changed; the alarm looks again
// api.FailingNoteDelay later, at most every api.FailingNoteEvery, and the
// response tells the directory (the stile-failing header) when what it
// found differs from what the directory was last told (a setting, so a
// new instance does not tell it again). The mark is kept in a setting too
// (one write a window), so that an instance that goes away before its
// look leaves the look to the next one.

// failWatch is what the tenant knows of what the directory was told.
type failWatch struct {
	// changedAt is when a commit first changed what may be failing since
	// the last look (0: nothing changed); lookedAt when it last looked;
	// kept says the mark is in settingFailingChanged.
	changedAt, lookedAt int64
	kept                bool
	// retell says the next look tells the directory whatever it was told
	// before (an import brought another tenant's setting).
	retell bool
	// note is the note the response tells the directory ("": none).
	note string
}

// settingFailing keeps the note the directory was last told, and
// settingFailingChanged when what is failing changed since the last look.
const (
	settingFailing        = "directory_failing"
	settingFailingChanged = "directory_failing_changed"
)

// due is when the tenant looks again at what is failing (0: no need).
func (f *failWatch) due() int64 {
	if f.changedAt == 0 {
		return 0
	}
	return max(f.changedAt+api.FailingNoteDelay.Milliseconds(), f.lookedAt+api.FailingNoteEvery.Milliseconds())
}

// failingChanged notes at now that what is failing may have changed, and
// keeps the mark for a new instance (a write the first time in a window;
// a failure to write it leaves the mark to this instance).
func (t *Tenant) failingChanged(now int64) {
	if t.fail.changedAt == 0 {
		t.fail.changedAt = now
	}
	if t.fail.kept {
		return
	}
	if err := t.db.Tx(func() error { return t.setSetting(now, settingFailingChanged, strconv.FormatInt(now, 10)) }); err != nil {
		t.db.Log(do.LevelWarn, printf.Sprintf("keep the mark that what is failing changed: %v", err))
		return
	}
	t.fail.kept = true
}

// loadFailing reads, on a new instance, whether an earlier one left a
// look at what is failing to do; a module that changed (the directory
// hears of new versions) looks too when the directory was told something
// fails: its reactions and projections may differ.
func (t *Tenant) loadFailing(now int64) error {
	v, ok, err := t.setting(settingFailingChanged)
	if err != nil {
		return err
	}
	if ok {
		t.fail.changedAt, _ = strconv.ParseInt(v, 10, 64)
		t.fail.kept = true
	}
	if t.store.FailingChanged() { // jobs of kinds no longer registered failed
		t.failingChanged(now)
		return nil
	}
	if !t.dir.versions {
		return nil
	}
	// A new module: a reaction or a projection the directory was told of
	// may be gone.
	told, _, err := t.setting(settingFailing)
	if err != nil || told == "" {
		return err
	}
	if n, err := api.DecodeFailingNote([]byte(told)); err != nil || len(n.Groups) > 0 || n.More > 0 {
		t.failingChanged(now)
	}
	return nil
}

// lookAtFailing is the alarm's look at what is failing, when it is due: a
// note for the directory when it differs from the last it was told.
func (t *Tenant) lookAtFailing(now int64) error {
	if due := t.fail.due(); due == 0 || now < due || t.name == "" {
		return nil
	}
	changedAt := t.fail.changedAt
	t.fail.changedAt, t.fail.lookedAt = 0, now
	var note string
	err := t.db.Tx(func() error {
		f, err := t.failingNow()
		if err != nil {
			return err
		}
		n := api.NoteOfFailing(t.name, f)
		told, _, err := t.setting(settingFailing)
		if err != nil {
			return err
		}
		if t.fail.kept {
			if err := t.clearSetting(settingFailingChanged); err != nil {
				return err
			}
		}
		note = string(n.AppendJSON(nil))
		if !t.fail.retell && (told == note || told == "" && len(n.Groups) == 0 && n.More == 0) {
			note = ""
			return nil
		}
		return t.setSetting(now, settingFailing, note)
	})
	if err != nil {
		t.fail.changedAt = changedAt // looked at again with the alarm's retry
		return printf.Errorf("look at what is failing: %w", err)
	}
	t.fail.kept, t.fail.retell, t.fail.note = false, false, note
	return nil
}

// changesFailing says whether a committed request of route may change
// what is failing beyond what the stores report: a projection rebuilt,
// migrations (an import is the importDone's).
func changesFailing(r api.Route) bool {
	return r == api.RouteRebuild || r == api.RouteMigrate
}
