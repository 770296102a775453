//go:build !js

package client

import (
	"net/http"

	"github.com/coder/websocket"

	"github.com/stile-run/stile/api"
)

// dialOptions are a watch's: the client's HTTP client, and its token in
// the Authorization header.
func (c *Client) dialOptions() *websocket.DialOptions {
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	return &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h, Subprotocols: []string{api.WatchProtocol}}
}
