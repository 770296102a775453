package workerd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// ErrNoNode means Node.js is not installed.
var ErrNoNode = errors.New("node is not installed: the workerd layer needs Node 20+")

// Server is a running Miniflare.
type Server struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *lockedBuffer
}

// Options of Start.
type Options struct {
	Root   string // the repository root (package.json, host/workerd/js/serve.mjs)
	Bundle string // the directory stile build wrote
	Token  string // the STILE_TOKEN binding
	Entry  string // another entry module in Bundle (default worker.mjs, or edge.mjs)
	// Vars are added to the Stile Worker's bindings (e.g. the edge
	// executor's STILE_EXECUTOR_SUBREQUESTS).
	Vars map[string]string
}

// installing serialises EnsureInstalled within a process, and a lock file
// across processes: two `npm ci` at once in one directory (parallel tests
// on a fresh clone) break each other.
var installing sync.Mutex

// EnsureInstalled runs `npm ci` in root when Miniflare is missing, so a
// fresh clone needs no manual step.
func EnsureInstalled(root string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return ErrNoNode
	}
	installing.Lock()
	defer installing.Unlock()
	installed := filepath.Join(root, "node_modules", "miniflare", "package.json")
	if _, err := os.Stat(installed); err == nil {
		return nil
	}
	// go test runs packages in processes of their own: two of them on a
	// fresh clone must not run npm ci in one directory at once.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "stile-npm-ci-"+hashPath(root)+".lock"))
	if err != nil {
		return fmt.Errorf("npm ci (installs Miniflare for the workerd layer): %w", err)
	}
	defer unlock()
	if _, err := os.Stat(installed); err == nil {
		return nil // another process installed it while we waited
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("npm ci (installs Miniflare for the workerd layer): %w\n%s", err, out)
	}
	return nil
}

// hashPath names a directory in a lock file's name.
func hashPath(p string) string {
	h := fnv.New64a()
	h.Write([]byte(p))
	return strconv.FormatUint(h.Sum64(), 16)
}

// Start installs Miniflare if needed and starts it; Close stops it.
func Start(o Options) (*Server, error) {
	if err := EnsureInstalled(o.Root); err != nil {
		return nil, err
	}
	s := &Server{log: &lockedBuffer{}}
	s.cmd = exec.Command("node", filepath.Join(o.Root, "host", "workerd", "js", "serve.mjs"), o.Bundle)
	s.cmd.Dir = o.Root
	s.cmd.Env = append(os.Environ(), "STILE_TOKEN="+o.Token)
	if o.Entry != "" {
		s.cmd.Env = append(s.cmd.Env, "STILE_ENTRY="+o.Entry)
	}
	if len(o.Vars) > 0 {
		vars, _ := json.Marshal(o.Vars)
		s.cmd.Env = append(s.cmd.Env, "STILE_VARS="+string(vars))
	}
	s.cmd.Stderr = s.log
	s.stdin, _ = s.cmd.StdinPipe()
	stdout, _ := s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start miniflare: %w", err)
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
			s.cmd.Process.Kill()
			return nil, fmt.Errorf("miniflare did not start: %q\n%s", l, s.log.String())
		}
		s.URL = ready.URL
		return s, nil
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		return nil, fmt.Errorf("miniflare did not start within 60 s\n%s", s.log.String())
	}
}

// Log is what Miniflare and workerd wrote to stderr.
func (s *Server) Log() string { return s.log.String() }

// Close disposes of Miniflare.
func (s *Server) Close() {
	s.stdin.Close()
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
	}
}

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
