package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/stile-run/stile/internal/atomicfile"
)

// alarmFile keeps the alarm schedule across restarts of the local host, as
// a Durable Object keeps its alarm. It is rewritten, and synced, when an
// alarm moves earlier than the file says (so no alarm is ever lost). After
// alarms fire the file keeps their old, earlier entries, which after a
// crash only fire alarms that find nothing due: it is tidied (without a
// sync) once tidyAfter alarms have fired since it was last written, which
// bounds that wasted work at a restart; a clean close writes it exact.
type alarmFile struct {
	path  string
	mu    sync.Mutex
	at    map[string]int64
	fired int // alarms fired since the file was last written
}

// tidyAfter is how many alarms may fire before the file drops their stale
// entries.
const tidyAfter = 32

// loadAlarms reads the alarm schedule. A missing or unreadable file is
// not an error: lost says so, and the manager asks every tenant for its
// next alarm (a torn file is what a crash or power loss during a write
// leaves where the system does not keep a rename's order).
func loadAlarms(path string) (f *alarmFile, lost string, err error) {
	f = &alarmFile{path: path, at: map[string]int64{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, path + " is missing", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("host: read alarms: %w", err)
	}
	if err := json.Unmarshal(b, &f.at); err != nil {
		f.at = map[string]int64{}
		return f, fmt.Sprintf("%s is unreadable (%v)", path, err), nil
	}
	return f, "", nil
}

func (f *alarmFile) snapshot() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int64, len(f.at))
	for k, v := range f.at {
		out[k] = v
	}
	return out
}

func (f *alarmFile) note(name string, at int64) error {
	f.mu.Lock()
	old, ok := f.at[name]
	if at == 0 || (ok && old > 0 && old <= at) {
		f.mu.Unlock()
		return nil
	}
	f.at[name] = at
	defer f.mu.Unlock()
	return f.write(true)
}

// save replaces the schedule with the tenants' alarms, read with f.mu
// held: an alarm moved earlier meanwhile is noted after, not overwritten.
func (f *alarmFile) save(alarms func() map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = alarms()
	return f.write(true)
}

// afterFiring notes that n alarms fired, and tidies the file once
// tidyAfter have, without the sync: every entry it drops or moves had
// moved later.
func (f *alarmFile) afterFiring(n int, alarms func() map[string]int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fired += n; f.fired < tidyAfter {
		return nil
	}
	f.at = alarms()
	return f.write(false)
}

// forget drops tenant's entry (an erased tenant's), rewriting the file
// if it had one.
func (f *alarmFile) forget(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.at[name]; !ok {
		return nil
	}
	delete(f.at, name)
	return f.write(true)
}

// write replaces the file with f.at atomically, synced unless it only
// tidies (afterFiring); f.mu is held.
func (f *alarmFile) write(sync bool) error {
	f.fired = 0
	b, err := json.Marshal(f.at)
	if err != nil {
		return err
	}
	if !sync {
		return atomicfile.WriteUnsynced(f.path, b, 0o644)
	}
	return atomicfile.Write(f.path, b, 0o644)
}
