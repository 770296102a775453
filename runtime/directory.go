package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// The tenant directory: the module tells its host (the stile-directory
// response header) when the tenant is first used and when it goes from
// idle to having ready work or back, so the directory is written on
// transitions, never on every request. Ready: a commit made work ready.
// Idle: a claim found nothing, or the tenant, planning pushes, found
// nothing ready. A new instance does not know what the directory was last
// told: its first transition is always said.

type dirState byte

const (
	dirUnknown dirState = iota
	dirReady
	dirIdle
)

func (t *Tenant) directoryNote(woke, idle bool, usage api.UsageDay) (do.Header, bool) {
	first := t.dir.first
	t.dir.first = false
	versions := t.dir.versions
	t.dir.versions = false
	changed := false
	switch {
	case woke && t.dir.told != dirReady:
		t.dir.told, changed = dirReady, true
	case idle && !woke && t.dir.told != dirIdle:
		t.dir.told, changed = dirIdle, true
	}
	if !first && !changed && !versions && usage.Day == "" || t.name == "" {
		return do.Header{}, false
	}
	n := api.DirectoryNote{Tenant: t.name, First: first, Ready: t.dir.told == dirReady, Version: t.schema.app.Version,
		Module: t.schema.module, Schema: t.schema.stile.Version, Failed: t.failedNote(), Usage: usage,
		// Only the versions changed: the directory keeps what it knows of
		// readiness (this instance does not know it yet).
		VersionsOnly: !first && !changed}
	return do.Header{Name: do.HeaderDirectory, Value: string(n.AppendJSON(nil))}, true
}

// failedNote names the migration that failed, for the directory.
func (t *Tenant) failedNote() string {
	f := t.schema.stile.Failed
	if f == nil {
		f = t.schema.app.Failed
	}
	if f == nil {
		return ""
	}
	return printf.Sprintf("%d_%s: %s", f.Version, f.Name, firstLine(f.Error))
}

// settingNoted keeps what the directory was last told of the tenant's
// versions, so that a new instance tells it only of a change.
const settingNoted = "directory_versions"

// noteVersions decides, on a new instance, whether the directory hears of
// the tenant's versions: when they changed since it last did, or when
// Stile's own tables cannot say.
func (t *Tenant) noteVersions() error {
	v := printf.Sprintf("%s %d %d %s", t.schema.module, t.schema.stile.Version, t.schema.app.Version, t.failedNote())
	if t.schema.stileBlocked {
		t.dir.versions = true
		return nil
	}
	noted, _, err := t.setting(settingNoted)
	if err != nil || noted == v {
		return err
	}
	t.dir.versions = true
	return t.setSetting(t.db.Now(), settingNoted, v)
}
