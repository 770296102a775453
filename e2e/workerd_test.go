package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/bundle"
	"github.com/stile-run/stile/client"
)

// workerd is the real Cloudflare runtime, through Miniflare 4 from npm,
// serving the Worker bundle of the test module on a loopback port.
type workerd struct {
	url string
	cl  *client.Client
}

func (w *workerd) name() string                          { return "workerd" }
func (w *workerd) client() *client.Client                { return w.cl }
func (w *workerd) realTime() bool                        { return true }
func (w *workerd) inProcess() *inProcess                 { return nil }
func (w *workerd) advance(t *testing.T, d time.Duration) { time.Sleep(d) }

// injectFault traps the tenant's module at the nth statement starting with
// prefix, through the test-only entry (e2e/miniflare/faults.mjs).
func (w *workerd) injectFault(t *testing.T, tenant, prefix string, nth int) {
	body, _ := json.Marshal(map[string]any{"prefix": prefix, "nth": nth})
	status, b, err := w.cl.Raw(context.Background(), "POST", "/v1/t/"+tenant+"/__faults", body, nil)
	require.NoError(t, err)
	require.Equal(t, 204, status, string(b))
}

var (
	workerdOnce sync.Once
	workerdT    *workerd
	workerdSkip string
	workerdErr  error
	workerdCmd  *exec.Cmd
	workerdIn   io.WriteCloser
	workerdLog  lockedBuffer
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// ci reports whether the suite runs in CI, where the workerd layer must run.
func ci() bool { return os.Getenv("CI") == "true" }

// startWorkerd builds the bundle and starts Miniflare once per test binary.
// Without Node it skips, except under CI=true, where it fails.
func startWorkerd(t *testing.T) *workerd {
	t.Helper()
	workerdOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			workerdErr = err
			return
		}
		if _, err := exec.LookPath("node"); err != nil {
			workerdSkip = "node is not installed: the workerd layer needs Node 20+ and `npm ci` (CI=true makes this a failure)"
			return
		}
		if err := ensureNodeModules(root); err != nil {
			workerdErr = err
			return
		}
		dir, err := os.MkdirTemp("", "stile-workerd-")
		if err != nil {
			workerdErr = err
			return
		}
		wasm := testWasmBytes()
		if wasm == nil {
			workerdErr = wasmErr
			return
		}
		if err := bundle.WriteWorker(dir, wasm); err != nil {
			workerdErr = err
			return
		}
		faults, err := os.ReadFile(filepath.Join(root, "e2e", "miniflare", "faults.mjs"))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "faults.mjs"), faults, 0o644)
		}
		if err != nil {
			workerdErr = err
			return
		}
		cmd := exec.Command("node", filepath.Join(root, "e2e", "miniflare", "serve.mjs"), dir)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "STILE_TOKEN="+token, "STILE_ENTRY=faults.mjs")
		cmd.Stderr = &workerdLog
		stdin, _ := cmd.StdinPipe()
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			workerdErr = fmt.Errorf("start miniflare: %w", err)
			return
		}
		line := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(stdout)
			if sc.Scan() {
				line <- sc.Text()
			}
			close(line)
			io.Copy(io.Discard, stdout)
		}()
		select {
		case l, ok := <-line:
			var ready struct{ URL string }
			if !ok || json.Unmarshal([]byte(l), &ready) != nil || ready.URL == "" {
				cmd.Process.Kill()
				workerdErr = fmt.Errorf("miniflare did not start: %q\n%s", l, workerdLog.String())
				return
			}
			workerdCmd, workerdIn = cmd, stdin
			workerdT = &workerd{url: ready.URL, cl: client.New(ready.URL, token, nil)}
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			workerdErr = fmt.Errorf("miniflare did not start within 60 s\n%s", workerdLog.String())
		}
	})
	if workerdSkip != "" {
		if ci() {
			t.Fatalf("CI=true: %s", workerdSkip)
		}
		t.Skip(workerdSkip)
	}
	require.NoError(t, workerdErr)
	return workerdT
}

// ensureNodeModules installs the pinned Miniflare from package-lock.json
// when it is missing, so `go test ./...` needs no manual step.
func ensureNodeModules(root string) error {
	if _, err := os.Stat(filepath.Join(root, "node_modules", "miniflare", "package.json")); err == nil {
		return nil
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci (installs Miniflare for the workerd layer): %w\n%s", err, out)
	}
	return nil
}

func stopWorkerd() {
	if workerdCmd == nil {
		return
	}
	workerdIn.Close()
	done := make(chan struct{})
	go func() { workerdCmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		workerdCmd.Process.Kill()
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopWorkerd()
	os.Exit(code)
}

func TestWorkerd(t *testing.T) {
	t.Parallel()
	w := startWorkerd(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("miniflare log:\n%s", workerdLog.String())
		}
	})
	runSuite(t, w)
}
