package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/server"
	"github.com/stile-run/stile/stiletest"
)

func TestRequestLogNamesTheRouteAndA5xxsCause(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	srv, err := server.New(h.Manager(), "tok", server.WithRequestLog(log))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cl := client.New(ts.URL, "tok", nil)
	_, err = cl.Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	_, err = cl.Tenant("acme").Job(context.Background(), "1")
	require.NoError(t, err)
	_, err = client.New(ts.URL, "wrong", nil).Tenant("acme").Job(context.Background(), "1")
	require.Error(t, err)

	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		require.NoError(t, json.Unmarshal(l, &m))
		lines = append(lines, m)
	}
	require.Len(t, lines, 3)
	require.Equal(t, "POST jobs", lines[0]["route"])
	require.Equal(t, "acme", lines[0]["tenant"])
	require.Equal(t, float64(201), lines[0]["status"])
	require.Equal(t, "GET jobs/{id}", lines[1]["route"])
	require.Equal(t, "/v1/t/acme/jobs/1", lines[1]["path"])
	require.Equal(t, float64(401), lines[2]["status"])
	require.Contains(t, lines[0], "ms")
}

func TestRequestLogWritesA5xxWithItsCause(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	h := stiletest.New(t, stiletest.Config{App: testapp.App(), Fault: func(tenant, sql string) bool {
		return strings.HasPrefix(strings.TrimSpace(sql), "INSERT INTO stile_jobs")
	}})
	srv, err := server.New(h.Manager(), "tok", server.WithRequestLog(log))
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, err = client.New(ts.URL, "tok", nil).Tenant("acme").Enqueue(context.Background(), api.EnqueueRequest{Kind: "test.echo"})
	require.Equal(t, api.CodeInternal, client.Code(err))
	var line map[string]any
	require.NoError(t, json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line))
	require.Equal(t, "ERROR", line["level"])
	require.Equal(t, float64(500), line["status"])
	require.Contains(t, line["cause"], "tenant module trapped: {INSERT INTO stile_jobs", "the cause is in the log, not only in the client's answer")
}

// A client that sends its request and half-closes its connection (it
// will send nothing more) gets its answer: the request's context ends
// when the connection's reading side does, but the call into the module
// runs to its end (under wazero a call stops where its context ends, and
// the instance would be discarded).
func TestAHalfClosedRequestIsAnswered(t *testing.T) {
	h := stiletest.New(t, stiletest.Config{Package: "github.com/stile-run/stile/e2e/testapp/tenant"})
	u, err := url.Parse(h.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	body := `{"kind":"test.echo","args":{}}`
	fmt.Fprintf(conn, "POST /v1/t/acme/jobs HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		u.Host, h.Token(), len(body), body)
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusCreated, resp.StatusCode, "%s", b)
	require.Zero(t, h.Manager().Restarts("acme"), "no instance was discarded")
	j, err := h.Tenant("acme").Job(context.Background(), "1")
	require.NoError(t, err)
	require.Equal(t, "available", j.State)
}
