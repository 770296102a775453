//go:build !js

package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/stiletest"
)

// A watch outlives the server's write timeout, which bounds one request
// (stile dev's is two minutes): the hijacked connection keeps none of
// the request's deadlines.
func TestWatchOutlivesTheWriteTimeout(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	srv, err := server.New(h.Manager(), "tok")
	require.NoError(t, err)
	plain := httptest.NewServer(srv) // the other requests', which may take longer than the bound
	defer plain.Close()
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.WriteTimeout = 100 * time.Millisecond
	ts.Start()
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	acme := client.New(plain.URL, "tok", nil).Tenant("acme")
	_, err = acme.Create(ctx)
	require.NoError(t, err)
	w, err := client.New(ts.URL, "tok", nil).Tenant("acme").Watch(ctx, api.WatchFilter{})
	require.NoError(t, err)
	defer w.Close()
	time.Sleep(300 * time.Millisecond) // past the write timeout
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	c, err := w.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, j.ID, c.Jobs[0].ID)
}

// A browser's watch carries its token as a subprotocol, and the server
// answers the subprotocol "stile", never the token's.
func TestWatchTakesTheTokenAsASubprotocol(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	srv, err := server.New(h.Manager(), "tok")
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = client.New(ts.URL, "tok", nil).Tenant("acme").Create(ctx)
	require.NoError(t, err)
	url := "ws" + ts.URL[len("http"):] + api.RouteWatch.Path("acme")

	conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{api.WatchProtocol, api.WatchTokenPrefix + "tok"},
		HTTPHeader: http.Header{"Origin": {"https://elsewhere.example"}}})
	require.NoError(t, err)
	defer conn.CloseNow()
	require.Equal(t, api.WatchProtocol, resp.Header.Get("Sec-WebSocket-Protocol"))

	_, resp, err = websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{api.WatchProtocol, api.WatchTokenPrefix + "wrong"}})
	require.Error(t, err)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
