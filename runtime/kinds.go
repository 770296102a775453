package runtime

import (
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/internal/printf"
)

// Job kinds a module stopped registering: their unfinished jobs cannot
// run (no claim may name the kind, no enqueue may make one). When the
// module's kinds differ from those of the last start, the jobs of the
// missing kinds end dead with an error saying so: they stay listed, their
// dependents follow as after any dead parent, and a module that registers
// the kind again may retry them. A running one finishes as its worker
// reports, and is looked at on the next start.

// settingKinds keeps the kinds of the module that last started.
const settingKinds = "job_kinds"

// unregisteredSlice bounds the jobs one transaction ends.
const unregisteredSlice = 500

func (t *Tenant) failUnregistered(now int64) error {
	kinds := t.app.Kinds()
	joined := strings.Join(kinds, " ")
	last, _, err := t.setting(settingKinds)
	if err != nil || last == joined {
		return err
	}
	msg := printf.Sprintf("this module no longer registers the job's kind (it registers %s): it cannot run; deploy a module that registers it, then retry the job", kindList(kinds))
	running := false
	for {
		n := 0
		err := t.db.Tx(func() error {
			js, err := t.store.Unregistered(kinds, unregisteredSlice)
			if err != nil {
				return err
			}
			for _, j := range js {
				if j.State == fence.StateRunning {
					running = true
					continue
				}
				if err := t.store.Fail(now, j, msg); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return printf.Errorf("end the jobs of kinds this module does not register: %w", err)
		}
		if n < unregisteredSlice || running {
			break
		}
	}
	if running {
		return nil // look again on the next start
	}
	return t.setSetting(now, settingKinds, joined)
}

// registered refuses to retry a job whose kind this module does not
// register: it would wait forever.
func (t *Tenant) registered(kind string) *api.Error {
	if _, ok := t.app.Kind(kind); ok {
		return nil
	}
	return api.Refuse(api.CodeUnknownKind, "job kind %q is not registered in this module (it registers %s): deploy a module that registers it, then retry", kind, kindList(t.app.Kinds()))
}
