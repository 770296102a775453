package runtime

import (
	"maps"
	"slices"

	"github.com/stile-run/stile/api"
)

func (t *Tenant) status() route {
	return func(now int64) (result, error) {
		return result{status: statusOK, body: t.statusBody(now).AppendJSON}, nil
	}
}

// statusBody is GET /status: the due time read from storage (not the
// cache: status shows the truth), and both ledgers.
func (t *Tenant) statusBody(now int64) api.Status {
	st := api.Status{Tenant: t.name, Now: ts(now), SchemaVersion: t.schema.stile.Version, MigrationDrift: t.schema.drift,
		Module: t.schema.module, StileSchema: t.schema.stile, ModuleSchema: t.schema.app}
	st.Kinds, st.Reactions = t.app.registered()
	if t.schema.stileBlocked {
		return st // Stile's tables may not be there to read
	}
	at, err := t.nextDue()
	if err == nil {
		if t.proj.due != 0 && (at == 0 || t.proj.due < at) {
			at = t.proj.due
		}
		if t.retain.due != 0 && (at == 0 || t.retain.due < at) {
			at = t.retain.due
		}
		if f := t.fail.due(); f != 0 && t.name != "" && (at == 0 || f < at) {
			at = f // a look at what is failing, for the directory
		}
		st.AlarmAt = tsPtr(at)
	}
	return st
}

// registered is what the module registers, as GET /status lists it: its
// kinds by name, its reactions in registration order.
func (a *App) registered() ([]api.ModuleKind, []api.ModuleReaction) {
	var kinds []api.ModuleKind
	for _, name := range a.Kinds() {
		kinds = append(kinds, api.ModuleKind{Name: name, Queue: a.kinds[name].Queue})
	}
	var reactions []api.ModuleReaction
	for _, r := range a.reactions {
		reactions = append(reactions, api.ModuleReaction{Name: r.h.Name, Kind: r.h.Kind})
	}
	return kinds, reactions
}

// runMigrations is POST /migrations: the tenant migrated before this
// route ran (answer), so it says how that went.
func (t *Tenant) runMigrations() route {
	return func(now int64) (result, error) {
		return result{status: statusOK, body: t.statusBody(now).AppendJSON}, nil
	}
}

func (t *Tenant) queues() route {
	return func(now int64) (result, error) {
		live, done, err := t.store.Counts()
		if err != nil {
			return result{}, err
		}
		resp := api.QueuesResponse{Queues: []api.QueueCounts{}, Finished: done}
		for _, c := range live {
			if n := len(resp.Queues); n == 0 || resp.Queues[n-1].Queue != c.Queue {
				resp.Queues = append(resp.Queues, api.QueueCounts{Queue: c.Queue, Counts: map[string]int64{}})
			}
			resp.Queues[len(resp.Queues)-1].Counts[c.State] = c.Count
		}
		oldest, err := t.store.OldestReady()
		if err != nil {
			return result{}, err
		}
		for i := range resp.Queues {
			if at, ok := oldest[resp.Queues[i].Queue]; ok {
				resp.Queues[i].OldestReadyAt = tsPtr(at)
			}
		}
		paused, err := t.store.PausedQueues()
		if err != nil {
			return result{}, err
		}
		resp.Paused = slices.Sorted(maps.Keys(paused))
		if t.executors.claims.since != 0 && !t.executors.claims.every {
			// Kinds of ready jobs no claim named: checked among the jobs a
			// push would count.
			_, ready, err := t.store.Ready(now, api.MaxPushCount)
			if err != nil {
				return result{}, err
			}
			for _, c := range ready {
				i := slices.IndexFunc(resp.Queues, func(q api.QueueCounts) bool { return q.Queue == c.Queue })
				if i >= 0 && t.executors.claims.unhandled(c.Kind) {
					resp.Queues[i].Unhandled = append(resp.Queues[i].Unhandled, c.Kind)
				}
			}
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func (t *Tenant) pauseQueue(queue string, body []byte) (route, *api.Error) {
	if !api.ValidName(queue) {
		return nil, api.Refuse(api.CodeInvalidRequest, "queue %q is invalid: use %s", queue, api.NameRule)
	}
	r, err := api.DecodeQueuePause(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	return func(now int64) (result, error) {
		if err := t.store.SetPaused(now, queue, r.Paused); err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.QueueState{Queue: queue, Paused: r.Paused}.AppendJSON}, nil
	}, nil
}

func (t *Tenant) limits() route {
	return func(int64) (result, error) {
		ls, err := t.store.ListLimits()
		if err != nil {
			return result{}, err
		}
		resp := api.LimitsResponse{Limits: make([]api.Limit, len(ls))}
		for i, l := range ls {
			resp.Limits[i] = api.Limit{Key: l.Key, Slots: l.Slots, InUse: l.InUse}
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func (t *Tenant) setLimit(key string, body []byte) (route, *api.Error) {
	if !api.ValidName(key) {
		return nil, api.Refuse(api.CodeInvalidRequest, "concurrency key %q is invalid: use %s", key, api.NameRule)
	}
	r, err := api.DecodeSetLimit(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if r.Slots == nil || *r.Slots < 0 || *r.Slots > api.MaxSlots {
		return nil, api.Refuse(api.CodeInvalidRequest, "missing or invalid field \"slots\": 0-%d jobs at once", api.MaxSlots)
	}
	return func(now int64) (result, error) {
		l, err := t.store.SetLimit(now, key, *r.Slots)
		if err != nil {
			return result{}, err
		}
		return result{status: statusOK, body: api.Limit{Key: l.Key, Slots: l.Slots, InUse: l.InUse}.AppendJSON}, nil
	}, nil
}
