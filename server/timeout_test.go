package server_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/stiletest"
)

// A body that does not arrive within the bound is answered 408
// body_timeout, and the connection closed; an unauthenticated one is
// refused and its connection closed too, never held while the client
// trickles. Both used to hold the connection as long as the client liked.
func TestSlowBodyIsRefused(t *testing.T) {
	t.Parallel()
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	srv, err := server.New(h.Manager(), "tok", server.WithBodyTimeout(200*time.Millisecond))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	for name, auth := range map[string]string{"authenticated": "Bearer tok", "unauthenticated": "Bearer nope"} {
		t.Run(name, func(t *testing.T) {
			conn, err := net.Dial("tcp", ts.Listener.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			// A bound on the test, should the server wait for the body.
			require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
			_, err = io.WriteString(conn, "POST /v1/t/acme/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: "+auth+
				"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"kind\":")
			require.NoError(t, err)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			require.NoError(t, err, "the server answered")
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			var e api.Error
			require.NoError(t, json.Unmarshal(body, &e), string(body))
			if auth == "Bearer tok" {
				require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
				require.Equal(t, api.CodeBodyTimeout, e.Code)
				require.Contains(t, e.Message, "did not arrive")
			} else {
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, string(body))
			}
			_, err = conn.Read(make([]byte, 1))
			require.ErrorIs(t, err, io.EOF, "the server closed the connection")
		})
	}
}
