package runtime

import (
	"strconv"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/runtime/internal/retention"
)

// Retention: the alarm deletes finished work once its window has passed,
// a slice at a time in a transaction of its own (package retention
// decides what and when). The module sets the policy (App.Retention), a
// tenant may override it (PUT /retention), and GET /storage shows what is
// kept.

// Retention sets the module's retention policy: the windows given replace
// api.DefaultRetention's (a zero field keeps that kind forever). It panics
// on a window out of bounds: that is a bug in the module, found at start.
func (a *App) Retention(r api.Retention) *App {
	if e := r.Check(); e != nil {
		panic("stile: retention: " + e.Message)
	}
	a.retention = &r
	return a
}

// StorageWarning sets the database size GET /storage warns at
// (api.DefaultStorageWarning: 80% of the platform's 10 GB).
func (a *App) StorageWarning(bytes int64) *App {
	if bytes <= 0 || bytes > api.StorageLimit {
		panic(printf.Sprintf("stile: storage warning %d must be within 1-%d bytes", bytes, int64(api.StorageLimit)))
	}
	a.storageWarn = bytes
	return a
}

func (a *App) retentionPolicy() api.Retention {
	if a.retention != nil {
		return *a.retention
	}
	return api.DefaultRetention
}

// Settings keys of the tenant's retention override.
const (
	settingRetention    = "retention"
	settingRetentionSet = "retention_set"
	// settingRetentionLooked is when the last look ran: a new instance
	// plans the next from it.
	settingRetentionLooked = "retention_looked"
)

// loadRetention reads the tenant's override and the next look.
func (t *Tenant) loadRetention(now int64) error {
	var over api.Retention
	var set api.RetentionFields
	if v, ok, err := t.setting(settingRetention); err != nil {
		return err
	} else if ok {
		if over, err = api.DecodeRetention([]byte(v)); err != nil {
			return printf.Errorf("read the tenant's retention: %w", err)
		}
	}
	v, _, err := t.setting(settingRetentionSet)
	if err != nil {
		return err
	}
	n, _ := strconv.ParseUint(v, 10, 64) // unset: none
	set = api.RetentionFields(n)
	t.retain.over, t.retain.set = over, set
	t.retain.policy = retention.Effective(t.app.retentionPolicy(), over, set)
	v, _, err = t.setting(settingRetentionLooked)
	if err != nil {
		return err
	}
	t.retain.looked, _ = strconv.ParseInt(v, 10, 64) // unset: none
	oldest, err := retention.ReadOldest(t.db, retention.OldestScan)
	if err != nil {
		return err
	}
	t.retain.due = retention.Planned(t.retain.policy, oldest, t.retain.looked)
	return nil
}

// purge runs one look for rows whose retention ran out, in its own
// transaction, and returns when to look again and whether it deleted dead
// jobs (what is failing changed).
func (t *Tenant) purge(now int64) (int64, bool, error) {
	next, deadGone := int64(0), false
	err := t.db.Tx(func() error {
		res, err := retention.Purge(t.db, t.retain.policy, now)
		if err != nil {
			return err
		}
		deadGone = res.Deleted[retention.Dead] > 0
		if err := t.setSetting(now, settingRetentionLooked, strconv.FormatInt(now, 10)); err != nil {
			return err
		}
		var oldest retention.Oldest
		if !res.Full { // a full slice's next goes at once: nothing to read
			if oldest, err = retention.ReadOldest(t.db, retention.OldestScanLook); err != nil {
				return err
			}
		}
		next = retention.Next(t.retain.policy, oldest, res.Full, now)
		return nil
	})
	if err == nil {
		t.retain.looked = now
	}
	return next, deadGone && err == nil, err
}

// wrote notes a committed write at now: what it wrote may go sooner than
// the look planned; when none was, it may be the first row retention will
// delete (one statement reads the oldest of each kind, a bounded number
// of rows; none when the policy keeps everything).
func (t *Tenant) wrote(now int64) error {
	if t.retain.due != 0 || t.retain.policy == (api.Retention{}) {
		t.retain.due = retention.AfterWrite(t.retain.policy, t.retain.due, now)
		return nil
	}
	oldest, err := retention.ReadOldest(t.db, retention.OldestScan)
	if err != nil {
		return err
	}
	t.retain.due = retention.Planned(t.retain.policy, oldest, t.retain.looked)
	return nil
}

func (t *Tenant) getRetention() route {
	return func(int64) (result, error) {
		return result{status: statusOK, body: t.retentionResponse().AppendJSON}, nil
	}
}

func (t *Tenant) retentionResponse() api.RetentionResponse {
	return api.RetentionResponse{Effective: t.retain.policy, Module: t.app.retentionPolicy(),
		Overridden: retention.Overridden(t.retain.set), NextPurgeAt: tsPtr(t.retain.due)}
}

func (t *Tenant) putRetention(c *call, body []byte) (route, *api.Error) {
	r, set, err := api.DecodeRetentionFields(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := r.Check(); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		if err := t.setSetting(now, settingRetention, string(r.AppendJSON(nil))); err != nil {
			return result{}, err
		}
		if err := t.setSetting(now, settingRetentionSet, strconv.FormatUint(uint64(set), 10)); err != nil {
			return result{}, err
		}
		// In memory only once committed: the tenant looks again now.
		c.retention = &pendingRetention{over: r, set: set}
		resp := t.retentionResponse()
		resp.Effective = retention.Effective(t.app.retentionPolicy(), r, set)
		resp.Overridden = retention.Overridden(set)
		oldest, err := retention.ReadOldest(t.db, retention.OldestScan)
		if err != nil {
			return result{}, err
		}
		resp.NextPurgeAt = tsPtr(retention.Planned(resp.Effective, oldest, t.retain.looked))
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}, nil
}

// pendingRetention is a PUT /retention not yet committed.
type pendingRetention struct {
	over api.Retention
	set  api.RetentionFields
}

// settleRetention puts in force the policy a request changed, once its
// transaction committed.
func (t *Tenant) settleRetention(c *call) error {
	p := c.retention
	if p == nil || !c.committed {
		return nil
	}
	t.retain.over, t.retain.set = p.over, p.set
	t.retain.policy = retention.Effective(t.app.retentionPolicy(), p.over, p.set)
	oldest, err := retention.ReadOldest(t.db, retention.OldestScan)
	if err != nil {
		return err
	}
	t.retain.due = retention.Planned(t.retain.policy, oldest, t.retain.looked)
	return nil
}

func (t *Tenant) storage(c *call) route {
	return func(int64) (result, error) {
		kinds, err := retention.Counts(t.db)
		if err != nil {
			return result{}, err
		}
		resp := api.StorageResponse{Kinds: kinds, LimitBytes: api.StorageLimit, WarnBytes: t.app.storageWarning(),
			Retention: t.retain.policy}
		for _, k := range kinds {
			resp.CountedBytes += k.Bytes
		}
		resp.DatabaseBytes, _ = strconv.ParseInt(c.dbBytes, 10, 64)
		if size := max(resp.DatabaseBytes, resp.CountedBytes); size >= resp.WarnBytes {
			resp.Warning = printf.Sprintf("this tenant stores %d bytes, past the warning at %d of the platform's %d: shorten its retention (PUT /retention), or move data out", size, resp.WarnBytes, int64(api.StorageLimit))
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func (a *App) storageWarning() int64 {
	if a.storageWarn > 0 {
		return a.storageWarn
	}
	return api.DefaultStorageWarning
}
