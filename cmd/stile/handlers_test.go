package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// dev is a `stile dev` a test started.
type dev struct {
	cmd   *exec.Cmd
	url   string
	mu    sync.Mutex
	lines []string // what it printed on stderr so far
}

// startDev runs `stile dev args…` in dir and reads its stderr until it
// prints its API's address.
func startDev(t *testing.T, bin, dir string, args ...string) *dev {
	t.Helper()
	d := &dev{cmd: exec.Command(bin, append([]string{"dev", "--addr", "127.0.0.1:0"}, args...)...)}
	d.cmd.Dir = dir
	stderr, err := d.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, d.cmd.Start())
	t.Cleanup(func() { d.stop(t) })
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	sc := bufio.NewScanner(stderr)
	for d.url == "" && sc.Scan() {
		d.add(sc.Text())
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			d.url = m[1]
		}
	}
	require.NotEmpty(t, d.url, "stile dev printed its address:\n%s", d.output())
	go func() {
		for sc.Scan() {
			d.add(sc.Text())
		}
	}()
	return d
}

func (d *dev) add(line string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lines = append(d.lines, line)
}

func (d *dev) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.lines, "\n")
}

// stop stops it with SIGINT, as Ctrl-C does, and requires a clean exit.
func (d *dev) stop(t *testing.T) {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "stile dev stops cleanly")
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		t.Error("stile dev did not stop on SIGINT")
	}
}

// TestDevWithHandlersIsReadyBeforeItAnswers: with a fresh data directory
// (no executor built yet), the first answer of `stile dev --handlers`
// comes after it said its handlers run, and jobs enqueued at once are
// pushed to them without a push ever failing (a failed push is retried
// only after a backoff).
func TestDevWithHandlersIsReadyBeforeItAnswers(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	logPath := filepath.Join(t.TempDir(), "dev.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(bin, "dev", "--addr", addr, "--data", t.TempDir(), "--token", testSecret,
		"--handlers", "./cmd/stile/defaultapp/handlers")
	cmd.Dir = root
	cmd.Stderr = logFile
	require.NoError(t, cmd.Start())
	d := &dev{cmd: cmd, url: "http://" + addr}
	t.Cleanup(func() { d.stop(t) })

	// The first answer, whatever it says; then what had been logged.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", d.url+api.TenantsPath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			break
		}
		require.NoError(t, ctx.Err(), "stile dev never answered")
		time.Sleep(10 * time.Millisecond)
	}
	before, err := os.ReadFile(logPath)
	require.NoError(t, err)

	acme := client.New(d.url, testSecret, nil).Tenant("acme")
	var ids []string
	for i := range 100 {
		j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "echo", Args: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	require.Eventually(t, func() bool {
		list, err := acme.List(ctx, "completed", "", "", "", 200)
		return err == nil && len(list.Jobs) == len(ids)
	}, 2*time.Minute, 50*time.Millisecond, "every job completes")
	pushes, err := acme.Pushes(ctx)
	require.NoError(t, err)
	require.Zero(t, pushes.Failures, "no push failed")
	require.Nil(t, pushes.RetryAt, "no push waits for a retry")
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Empty(t, grep(string(log), "push not delivered"), "every push was delivered")
	require.Regexp(t, `handlers of \./cmd/stile/defaultapp/handlers running: jobs echo, sleep, webhook and reactions log`, string(before),
		"the handlers ran before the API answered")
}

// TestDevWarnsAboutWorkNoHandlerHandles: a job kind or a reaction of the
// module that the handler package does not handle gets a warning line at
// start, and asking the module creates no tenant.
func TestDevWarnsAboutWorkNoHandlerHandles(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	data := t.TempDir()
	d := startDev(t, bin, root, "--data", data, "--token", testSecret, "--handlers", "./cmd/stile/testdata/partial/handlers",
		"./cmd/stile/testdata/partial/tenant")
	kind := regexp.MustCompile(`warning: job kind "forgotten" \(queue later\) has no handler in \./cmd/stile/testdata/partial/handlers`)
	policy := regexp.MustCompile(`warning: policy "unheard" has no handler in \./cmd/stile/testdata/partial/handlers`)
	require.Eventually(t, func() bool {
		out := d.output()
		return kind.MatchString(out) && policy.MatchString(out)
	}, 10*time.Second, 10*time.Millisecond, "a warning for each:\n%s", d.output())
	out := d.output()
	require.NotRegexp(t, `warning: .*"(greet|audit)"`, out, "what the handlers handle is not warned about")
	require.Equal(t, 2, strings.Count(out, "warning:"), "one line each:\n%s", out)

	entries, err := os.ReadDir(filepath.Join(data, "tenants"))
	require.NoError(t, err)
	require.Empty(t, entries, "no tenant was created")
	tenants, err := client.New(d.url, testSecret, nil).Tenants(context.Background(), api.TenantsQuery{})
	require.NoError(t, err)
	require.Empty(t, tenants.Tenants, "the directory lists no tenant")
}

// TestDevRefusesAHandlerPackageThatDoesNotBuild: the error names the
// package, and nothing is served.
func TestDevRefusesAHandlerPackageThatDoesNotBuild(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	cmd := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--token", testSecret, "--handlers", "./no/such/handlers")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "no/such/handlers")
	require.NotContains(t, string(b), "API ", "nothing was served")
}

// grep is the lines of s that contain sub.
func grep(s, sub string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// syncBuffer collects a command's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
