package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"github.com/stile-run/stile/api"
)

// Watch is a live watch of a tenant's changes (GET /v1/t/{tenant}/watch,
// a WebSocket). Next returns them in order; Close ends it.
type Watch struct {
	conn *websocket.Conn
}

// Watch starts following the tenant's changes that f lets through: one
// job (f.Job), the jobs of one kind (f.Kind), or everything. It returns
// once the tenant accepted the watch: every change committed after that
// is sent. A refusal (a bad token, a role that may not read jobs, a
// tenant that does not exist, a bad filter) is an *api.Error.
//
// A change is a notice of committed state, not a log: to follow a job
// without missing its state, read it (Job) after Watch returned, then
// apply the changes, and read it again on a change that says More.
func (t *Tenant) Watch(ctx context.Context, f api.WatchFilter) (*Watch, error) {
	q := url.Values{}
	if f.Job != "" {
		q.Set("job", f.Job)
	}
	if f.Kind != "" {
		q.Set("kind", f.Kind)
	}
	p := t.path(api.RouteWatch, q)
	u := t.c.base + p
	switch {
	case strings.HasPrefix(u, "http://"):
		u = "ws://" + strings.TrimPrefix(u, "http://")
	case strings.HasPrefix(u, "https://"):
		u = "wss://" + strings.TrimPrefix(u, "https://")
	}
	conn, resp, err := websocket.Dial(ctx, u, t.c.dialOptions())
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			var b []byte
			if resp.Body != nil {
				b, _ = io.ReadAll(resp.Body)
			}
			return nil, readAnswer(api.RouteWatch.Method, p, resp.StatusCode, b, nil)
		}
		return nil, fmt.Errorf("%s %s: %w", api.RouteWatch.Method, p, err)
	}
	conn.SetReadLimit(1 << 20)
	return &Watch{conn: conn}, nil
}

// Next waits for the next change. It fails once the watch ended: Close,
// ctx's end (which ends the watch too), or the server closing it (a
// restart, a shutdown); start a new one, and read what it follows again.
func (w *Watch) Next(ctx context.Context) (api.Change, error) {
	typ, b, err := w.conn.Read(ctx)
	if err != nil {
		return api.Change{}, fmt.Errorf("watch: %w", err)
	}
	if typ != websocket.MessageText {
		return api.Change{}, errors.New("watch: a binary message: the server speaks another protocol")
	}
	c, err := api.DecodeChange(b)
	if err != nil {
		return api.Change{}, fmt.Errorf("watch: decode a change: %w", err)
	}
	return c, nil
}

// Close ends the watch.
func (w *Watch) Close() error {
	return w.conn.Close(websocket.StatusNormalClosure, "")
}
