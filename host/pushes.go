package host

import (
	"context"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// Pusher delivers a push to an executor. Push returns once an executor
// accepted it (or could not), never after the work: the tenant is not
// held while handlers run. The executor ends the push itself when it
// stops claiming.
type Pusher interface {
	Push(ctx context.Context, p api.PushRequest) error
}

// PushFunc is a Pusher that is a function.
type PushFunc func(ctx context.Context, p api.PushRequest) error

// Push implements Pusher.
func (f PushFunc) Push(ctx context.Context, p api.PushRequest) error { return f(ctx, p) }

// deliver sends each push of a response to the Pusher, outside the
// tenant's call; one it could not deliver is ended as failed, so the
// tenant retries it after a backoff.
func (m *Manager) deliver(tenant, header string) {
	p, err := api.DecodePush([]byte(header))
	if err != nil {
		m.log.Error("tenant sent an unreadable push", "tenant", tenant, "err", err)
		return
	}
	for _, id := range p.IDs {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := m.cfg.Pusher.Push(ctx, api.PushRequest{Tenant: tenant, ID: id, Jobs: p.Jobs, Kinds: p.Kinds, Reactions: p.Reactions,
			LingerMs: p.LingerMs})
		cancel()
		if err == nil {
			continue
		}
		m.log.Warn("push not delivered; the tenant retries it", "tenant", tenant, "push", id, "err", err)
		body := api.PushDone{End: api.PushFailed, Error: err.Error()}.AppendJSON(nil)
		if _, err := m.Inspect(context.Background(), tenant, do.Request{Kind: do.KindAPI,
			Method: api.RoutePushDone.Method, Path: api.RoutePushDone.Path(tenant, id), Body: body,
			Headers: do.Headers{{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}}); err != nil {
			m.log.Warn("could not end the failed push; it expires", "tenant", tenant, "push", id, "err", err)
		}
	}
}
