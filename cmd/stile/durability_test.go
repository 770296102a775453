package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// runDevOver runs `stile dev` over data with args and returns its address;
// stop stops it with Ctrl-C and requires a clean exit.
func runDevOver(t *testing.T, bin, data string, args ...string) (url string, stop func()) {
	t.Helper()
	root, _ := filepath.Abs("../..")
	dev := exec.Command(bin, append([]string{"dev", "--addr", "127.0.0.1:0", "--data", data, "--token", testSecret}, args...)...)
	dev.Dir = root
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	t.Cleanup(func() { dev.Process.Kill() })
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	sc := bufio.NewScanner(stderr)
	var lines []string
	for url == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	require.NotEmpty(t, url, "stile dev started: %q", lines)
	go func() {
		for sc.Scan() {
		}
	}()
	return url, func() {
		require.NoError(t, dev.Process.Signal(syscall.SIGINT))
		require.NoError(t, dev.Wait(), "stile dev stops cleanly")
	}
}

// TestDevStartsOverTornRecords: `stile dev` starts over a torn alarm
// schedule and tenant directory (it refused to), rebuilds both from the
// tenants, and an idle tenant's alarm fires with no request of its own.
func TestDevStartsOverTornRecords(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	data := t.TempDir()
	ctx := context.Background()
	url, stop := runDevOver(t, bin, data)
	runAt := time.Now().Add(5 * time.Second).UTC()
	_, err := client.New(url, testSecret, nil).Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "echo", RunAt: &runAt})
	require.NoError(t, err)
	stop()

	require.NoError(t, os.WriteFile(filepath.Join(data, "alarms.json"), []byte(`{"acme":`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(data, "directory.json"), []byte(`{"seq":`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(data, "directory.journal"), []byte("garbage\n{\"se"), 0o644))

	url, stop = runDevOver(t, bin, data)
	defer stop()
	cl := client.New(url, testSecret, nil)
	// The alarm fired when the job came due: the tenant told the
	// directory it has ready work, at the alarm's time or later. Nothing
	// asked the tenant anything but the host's rebuild.
	require.Eventually(t, func() bool {
		page, err := cl.Tenants(ctx, api.TenantsQuery{})
		require.NoError(t, err)
		return len(page.Tenants) == 1 && page.Tenants[0].Name == "acme" && page.Tenants[0].Ready &&
			!page.Tenants[0].LastSeen.Before(runAt.Truncate(time.Millisecond))
	}, 2*time.Minute, 100*time.Millisecond)
	b, err := os.ReadFile(filepath.Join(data, "alarms.json"))
	require.NoError(t, err)
	require.True(t, json.Valid(b), "the schedule was written whole: %s", b)
}

// TestDevBoundsSlowAndIdleConnections: a body slower than --body-timeout
// is answered 408 body_timeout, and an idle keep-alive connection is
// closed after --idle-timeout. Both were held as long as the client liked.
func TestDevBoundsSlowAndIdleConnections(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	url, stop := runDevOver(t, bin, t.TempDir(), "--body-timeout", "500ms", "--idle-timeout", "500ms")
	defer stop()
	addr := url[len("http://"):]

	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer slow.Close()
	require.NoError(t, slow.SetDeadline(time.Now().Add(time.Minute))) // a bound on the test only
	_, err = io.WriteString(slow, "POST /v1/t/acme/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+testSecret+"\r\nContent-Length: 100\r\n\r\n{\"kind\":")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
	var e api.Error
	require.NoError(t, json.Unmarshal(body, &e), string(body))
	require.Equal(t, api.CodeBodyTimeout, e.Code)

	idle, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer idle.Close()
	require.NoError(t, idle.SetDeadline(time.Now().Add(time.Minute)))
	_, err = io.WriteString(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(idle)
	resp, err = http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the idle connection was closed")
}
