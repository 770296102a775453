package server

import (
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/stile-run/stile/api"
)

// watchRoute is GET …/watch as the module names the route it matched.
var watchRoute = api.RouteWatch.Method + " " + api.RouteWatch.Pattern

// credentials are a request's Authorization values: its header, or for a
// watch that has none (a browser's WebSocket cannot set it) the token it
// offers as a subprotocol (api.WatchAuthorization).
func credentials(r *http.Request) []string {
	values := r.Header.Values("Authorization")
	if len(values) == 0 && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+api.RouteWatch.Pattern) {
		if a := api.WatchAuthorization(r.Header.Values("Sec-WebSocket-Protocol")); a != "" {
			return []string{a}
		}
	}
	return values
}

// watch upgrades a watch the module accepted (its answer, the filter, in
// body) to a WebSocket and sends it the tenant's changes until either
// side closes. The watch starts before the upgrade is answered, so a
// client whose dial returned misses no later change.
func (s *Server) watch(w http.ResponseWriter, r *http.Request, tenant string, body []byte) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(w, api.Refuse(api.CodeUpgradeRequired, "GET /v1/t/%s/watch is a WebSocket: send it as an upgrade (Upgrade: websocket)", tenant))
		return
	}
	filter, err := api.DecodeWatchFilter(body)
	if err != nil {
		writeError(w, api.Internal("the module's watch filter: "+err.Error()))
		return
	}
	sub := s.manager.Watch(tenant, filter)
	defer sub.Close()
	// Any origin, as the Worker accepts: a watch carries its token
	// explicitly (no cookie or other ambient credential a page of another
	// site could borrow), so the origin adds nothing to check.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{api.WatchProtocol}, InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the request
	}
	defer conn.CloseNow()
	ctx := conn.CloseRead(r.Context()) // ends when the client closes
	for {
		c, err := sub.Next(ctx)
		if err != nil {
			conn.Close(websocket.StatusGoingAway, "the watch ended")
			return
		}
		if err := conn.Write(ctx, websocket.MessageText, c.AppendJSON(nil)); err != nil {
			return
		}
	}
}
