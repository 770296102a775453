//go:build js

package client

import (
	"github.com/coder/websocket"

	"github.com/stile-run/stile/api"
)

// dialOptions are a watch's in a browser, whose WebSocket sets no
// Authorization header: the token goes as a second subprotocol
// (api.WatchAuthorization).
func (c *Client) dialOptions() *websocket.DialOptions {
	protocols := []string{api.WatchProtocol}
	if c.token != "" {
		protocols = append(protocols, api.WatchTokenPrefix+c.token)
	}
	return &websocket.DialOptions{Subprotocols: protocols}
}
