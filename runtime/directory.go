package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// The tenant directory: the module tells its host (the stile-directory
// response header) when the tenant is first used and when it goes from
// idle to having ready work or back, so the directory is written on
// transitions, never on every request. Ready: a commit made work ready.
// Idle: a claim found nothing. A new instance does not know what the
// directory was last told: its first transition is always said.

type dirState byte

const (
	dirUnknown dirState = iota
	dirReady
	dirIdle
)

func (t *Tenant) directoryNote(woke, idle bool) (do.Header, bool) {
	first := t.dirFirst
	t.dirFirst = false
	changed := false
	switch {
	case woke && t.dirState != dirReady:
		t.dirState, changed = dirReady, true
	case idle && !woke && t.dirState != dirIdle:
		t.dirState, changed = dirIdle, true
	}
	if !first && !changed || t.name == "" {
		return do.Header{}, false
	}
	n := api.DirectoryNote{Tenant: t.name, First: first, Ready: t.dirState == dirReady, Version: t.app.version()}
	return do.Header{Name: do.HeaderDirectory, Value: string(n.AppendJSON(nil))}, true
}

// version is the highest migration of the module's own tables.
func (a *App) version() int64 {
	v := int64(0)
	for _, m := range a.migrations {
		v = max(v, int64(m.Version))
	}
	return v
}
