package directory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/host/directory"
)

func list(t *testing.T, d *directory.Dir, q api.TenantsQuery) api.TenantsResponse {
	t.Helper()
	q.Limit = api.MaxTenantsPage
	resp, err := d.List(context.Background(), q)
	require.NoError(t, err)
	return resp
}

func names(r api.TenantsResponse) []string {
	var n []string
	for _, t := range r.Tenants {
		n = append(n, t.Name)
	}
	return n
}

// A directory reopened from its files, with or without a clean close, says
// what it said before: the journal holds every note since the snapshot.
func TestReopenedDirectoryKeepsEveryNote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directory.json")
	d, err := directory.Open(path)
	require.NoError(t, err)
	require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: "a", First: true, Ready: true, Version: 1}))
	require.NoError(t, d.Note(2000, api.DirectoryNote{Tenant: "b", First: true, Version: 1}))
	require.NoError(t, d.Note(3000, api.DirectoryNote{Tenant: "c", First: true, Ready: true, Version: 1}))
	require.NoError(t, d.Note(4000, api.DirectoryNote{Tenant: "c", Erased: true}))
	require.NoError(t, d.Note(5000, api.DirectoryNote{Tenant: "b", Version: 2, Module: "m2", VersionsOnly: true}))
	before := list(t, d, api.TenantsQuery{})
	ready := list(t, d, api.TenantsQuery{Ready: true})

	// No Close: as if the process had died. The erasure wrote a snapshot
	// (nothing of c stays in the files); the journal has the note after it.
	j, err := os.ReadFile(filepath.Join(filepath.Dir(path), "directory.journal"))
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(j), "\n"))
	again, err := directory.Open(path)
	require.NoError(t, err)
	require.Equal(t, before, list(t, again, api.TenantsQuery{}))
	require.Equal(t, ready, list(t, again, api.TenantsQuery{Ready: true}))
	require.Equal(t, []string{"a", "b"}, names(before))
	require.Equal(t, []string{"a"}, names(ready))
	require.Equal(t, "m2", before.Tenants[1].Module)
	require.EqualValues(t, 2, before.Tenants[1].Version)

	// Opening folded the journal into the snapshot, and a clean close
	// leaves nothing in it.
	require.FileExists(t, path)
	require.NoError(t, again.Note(6000, api.DirectoryNote{Tenant: "d", First: true, Version: 1}))
	require.NoError(t, again.Close())
	j, err = os.ReadFile(filepath.Join(filepath.Dir(path), "directory.journal"))
	require.NoError(t, err)
	require.Empty(t, j)
	third, err := directory.Open(path)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "d"}, names(list(t, third, api.TenantsQuery{})))
}

// A journal whose last line was cut short (the process died writing it)
// loses that note only; a damaged line before the end is refused.
func TestJournalCutShortLosesOnlyItsLastNote(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "directory.json")
	d, err := directory.Open(path)
	require.NoError(t, err)
	require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: "a", First: true, Version: 1}))
	require.NoError(t, d.Note(2000, api.DirectoryNote{Tenant: "b", First: true, Version: 1}))
	journal := filepath.Join(dir, "directory.journal")
	b, err := os.ReadFile(journal)
	require.NoError(t, err)

	require.NoError(t, os.WriteFile(journal, b[:len(b)-10], 0o644))
	cut, err := directory.Open(path)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, names(list(t, cut, api.TenantsQuery{})))

	require.NoError(t, os.Remove(path))
	// An unreadable line elsewhere is skipped and said, never a refusal
	// to open: the host notes its tenants again.
	require.NoError(t, os.WriteFile(journal, append([]byte("{not json\n"), b...), 0o644))
	damaged, err := directory.Open(path)
	require.NoError(t, err)
	require.Contains(t, damaged.Damage(), "directory.journal, line 1")
	require.Equal(t, []string{"a", "b"}, names(list(t, damaged, api.TenantsQuery{})))
}

// Many notes keep the journal short: it is folded into the snapshot once
// it outgrows the tenants, and the directory still says every note's
// outcome after a reopen.
func TestJournalIsFoldedIntoTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "directory.json")
	d, err := directory.Open(path)
	require.NoError(t, err)
	for i := range 5000 {
		name := fmt.Sprintf("t-%02d", i%50)
		require.NoError(t, d.Note(int64(i), api.DirectoryNote{Tenant: name, First: i < 50, Ready: i%2 == 0, Version: int64(i)}))
	}
	require.FileExists(t, path)
	info, err := os.Stat(filepath.Join(dir, "directory.journal"))
	require.NoError(t, err)
	require.Less(t, info.Size(), int64(1100*300), "the journal was never folded")
	want := list(t, d, api.TenantsQuery{})
	require.Len(t, want.Tenants, 50)
	again, err := directory.Open(path)
	require.NoError(t, err)
	require.Equal(t, want, list(t, again, api.TenantsQuery{}))
	require.EqualValues(t, 4999, want.Tenants[49].Version)
}

// A directory written before the ready sequence was kept (every entry
// without "seq") still answers ready queries for its ready tenants.
func TestOldSnapshotReadyTenantsAreFound(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "directory.json")
	old := `{"seq":7,"tenants":[{"name":"a","first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","version":1,"ready":true},` +
		`{"name":"b","first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","version":1,"ready":false}]}`
	require.NoError(t, os.WriteFile(path, []byte(old), 0o644))
	d, err := directory.Open(path)
	require.NoError(t, err)
	ready := list(t, d, api.TenantsQuery{Ready: true})
	require.Equal(t, []string{"a"}, names(ready))
	require.Greater(t, ready.Seq, int64(7))
	again, err := directory.Open(path)
	require.NoError(t, err)
	require.Equal(t, ready, list(t, again, api.TenantsQuery{Ready: true}), "the new sequence was kept")
}

// An unreadable snapshot or journal line does not stop the directory
// from opening: what is readable is kept, and Damage says what was not.
func TestDamagedDirectoryOpens(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "directory.json")
	d, err := directory.Open(path)
	require.NoError(t, err)
	require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: "a", First: true, Version: 1}))
	require.NoError(t, d.Close())
	require.NoError(t, os.WriteFile(path, []byte(`{"seq":1,"tenants":[{"name":"a"`), 0o644))
	require.NoError(t, os.WriteFile(strings.TrimSuffix(path, ".json")+".journal",
		[]byte("garbage\n{\"seq\":7,\"entry\":{\"name\":\"b\",\"first_seen\":\"2026-01-01T00:00:00Z\",\"last_seen\":\"2026-01-01T00:00:00Z\",\"version\":1,\"ready\":false,\"seq\":0}}\n{\"seq\":8,"), 0o644))
	d, err = directory.Open(path)
	require.NoError(t, err)
	require.Contains(t, d.Damage(), "unreadable")
	require.True(t, d.Has("b"), "the readable line is kept")
	require.False(t, d.Has("a"))
	require.NoError(t, d.Close())

	d, err = directory.Open(path)
	require.NoError(t, err)
	require.Empty(t, d.Damage(), "the files were rewritten whole")
	require.True(t, d.Has("b"))
}

// An erased tenant leaves the directory's files at once, not at the next
// compaction: neither the snapshot nor the journal names it.
func TestErasedTenantLeavesTheFilesAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := directory.Open(filepath.Join(dir, "directory.json"))
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: "kept", First: true, Version: 1}))
	require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: "secret-tenant-zq", First: true, Ready: true, Version: 1, Module: "m1"}))
	require.NoError(t, d.Note(2000, api.DirectoryNote{Tenant: "secret-tenant-zq", Erased: true}))
	require.False(t, d.Has("secret-tenant-zq"))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.NotContains(t, string(b), "secret-tenant-zq", e.Name())
	}
	require.True(t, d.Has("kept"))
}

// What tenants say is failing in them is kept across a reopen (from the
// journal, and from a snapshot), summed by Failing for a prefix, and
// forgotten with an erased tenant; a note of a tenant never listed is
// refused, and one with nothing failing clears the tenant's.
func TestFailingNotesAreKeptAndSummed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directory.json")
	d, err := directory.Open(path)
	require.NoError(t, err)
	group := func(n int64) []api.FailingGroup {
		return []api.FailingGroup{{What: "job", Name: "email", State: "dead", Error: "timeout", Count: n, First: 1000, Last: 2000, Latest: "9"}}
	}
	require.Error(t, d.NoteFailing(api.FailingNote{Tenant: "ghost", Groups: group(1)}), "a tenant the directory does not list")
	for _, name := range []string{"acme-a", "acme-b", "zeta"} {
		require.NoError(t, d.Note(1000, api.DirectoryNote{Tenant: name, First: true, Version: 1}))
		require.NoError(t, d.NoteFailing(api.FailingNote{Tenant: name, Groups: group(2)}))
	}
	require.NoError(t, d.Note(3000, api.DirectoryNote{Tenant: "acme-a", Ready: true, Version: 1}), "a readiness note keeps what is failing")
	f := d.Failing("acme-")
	require.Len(t, f.Groups, 1)
	require.Equal(t, int64(4), f.Groups[0].Count)
	require.Equal(t, int64(2), f.Tenants)

	again, err := directory.Open(path) // from the journal, no close
	require.NoError(t, err)
	require.Equal(t, int64(6), again.Failing("").Groups[0].Count)
	require.NoError(t, again.NoteFailing(api.FailingNote{Tenant: "zeta", Groups: []api.FailingGroup{}}))
	require.NoError(t, again.Note(4000, api.DirectoryNote{Tenant: "acme-b", Erased: true}))
	require.NoError(t, again.Close())

	last, err := directory.Open(path) // from the snapshot
	require.NoError(t, err)
	f = last.Failing("")
	require.Equal(t, int64(1), f.Tenants, "zeta cleared, acme-b erased")
	require.Equal(t, "acme-a", f.Groups[0].Tenants[0].Tenant)
	require.Equal(t, int64(2), f.Groups[0].Count)
}
