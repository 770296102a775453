package workerd

import (
	"bufio"
	"bytes"
	"embed"
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
	// tmp is the TMPDIR Miniflare runs with: it keeps the objects'
	// in-memory storage and caches there and does not remove them when
	// disposed, so Close removes the whole directory.
	tmp string
}

// TempDir is the directory Miniflare keeps its temporary files in, which
// Close removes.
func (s *Server) TempDir() string { return s.tmp }

// Options of Start.
type Options struct {
	Bundle string // the directory stile build wrote
	Token  string // the STILE_TOKEN binding
	Entry  string // another entry module in Bundle (default worker.mjs, or edge.mjs)
	// Vars are added to the Stile Worker's bindings (e.g. the edge
	// executor's STILE_EXECUTOR_SUBREQUESTS).
	Vars map[string]string
	// Persist keeps the Durable Objects' storage in this directory: a
	// server started later over it, with another bundle, is the same
	// deployment upgraded. Default: in memory.
	Persist string
}

//go:embed npm/package.json npm/package-lock.json
var npmFiles embed.FS

// installing serialises EnsureInstalled within a process, and a lock file
// across processes: two `npm ci` at once in one directory (parallel tests
// on a fresh clone) break each other.
var installing sync.Mutex

// NodeDir is where Miniflare is installed: $STILE_NODE_DIR, else a
// directory of the user's cache named after the lock file, so any module
// that imports Stile (a checkout, or the module cache, which is read-only)
// runs the same pinned Miniflare.
func NodeDir() (string, error) {
	if d := os.Getenv("STILE_NODE_DIR"); d != "" {
		return d, nil
	}
	lock, err := npmFiles.ReadFile("npm/package-lock.json")
	if err != nil {
		return "", err
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "stile", "miniflare-"+hashBytes(lock)), nil
}

// EnsureInstalled writes the pinned package.json, its lock file and
// serve.mjs into NodeDir and runs `npm ci` there when Miniflare is
// missing, so a fresh machine needs no manual step. It returns NodeDir.
func EnsureInstalled() (string, error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", ErrNoNode
	}
	dir, err := NodeDir()
	if err != nil {
		return "", err
	}
	installing.Lock()
	defer installing.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("install Miniflare: %w", err)
	}
	// serve.mjs follows this build of Stile; the lock file names the dir.
	serve, err := js.ReadFile("js/serve.mjs")
	if err != nil {
		return "", err
	}
	if err := writeIfChanged(filepath.Join(dir, "serve.mjs"), serve); err != nil {
		return "", err
	}
	installed := filepath.Join(dir, "node_modules", "miniflare", "package.json")
	if _, err := os.Stat(installed); err == nil {
		return dir, nil
	}
	// go test runs packages in processes of their own: two of them on a
	// fresh machine must not run npm ci in one directory at once.
	unlock, err := lockFile(filepath.Join(os.TempDir(), "stile-npm-ci-"+hashBytes([]byte(dir))+".lock"))
	if err != nil {
		return "", fmt.Errorf("npm ci (installs Miniflare for the workerd layer): %w", err)
	}
	defer unlock()
	if _, err := os.Stat(installed); err == nil {
		return dir, nil // another process installed it while we waited
	}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := npmFiles.ReadFile("npm/" + name)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", fmt.Errorf("install Miniflare: %w", err)
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("npm ci in %s (installs Miniflare for the workerd layer): %w\n%s", dir, err, out)
	}
	return dir, nil
}

func writeIfChanged(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// hashBytes names a file or directory after content.
func hashBytes(b []byte) string {
	h := fnv.New64a()
	h.Write(b)
	return strconv.FormatUint(h.Sum64(), 16)
}

// Start installs Miniflare if needed and starts it; Close stops it.
func Start(o Options) (*Server, error) {
	dir, err := EnsureInstalled()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "stile-miniflare-")
	if err != nil {
		return nil, fmt.Errorf("start miniflare: %w", err)
	}
	s := &Server{log: &lockedBuffer{}, tmp: tmp}
	s.cmd = exec.Command("node", filepath.Join(dir, "serve.mjs"), o.Bundle)
	s.cmd.Dir = dir
	s.cmd.Env = append(os.Environ(), "STILE_TOKEN="+o.Token, "TMPDIR="+tmp)
	if o.Entry != "" {
		s.cmd.Env = append(s.cmd.Env, "STILE_ENTRY="+o.Entry)
	}
	if o.Persist != "" {
		s.cmd.Env = append(s.cmd.Env, "STILE_PERSIST="+o.Persist)
	}
	if len(o.Vars) > 0 {
		vars, _ := json.Marshal(o.Vars)
		s.cmd.Env = append(s.cmd.Env, "STILE_VARS="+string(vars))
	}
	s.cmd.Stderr = s.log
	s.stdin, _ = s.cmd.StdinPipe()
	stdout, _ := s.cmd.StdoutPipe()
	if err := s.cmd.Start(); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("start miniflare: %w", err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(s.log, stdout) // the Workers' console output
	}()
	select {
	case l, ok := <-line:
		var ready struct{ URL string }
		if !ok || json.Unmarshal([]byte(l), &ready) != nil || ready.URL == "" {
			s.kill()
			return nil, fmt.Errorf("miniflare did not start: %q\n%s", l, s.log.String())
		}
		s.URL = ready.URL
		return s, nil
	case <-time.After(60 * time.Second):
		s.kill()
		return nil, fmt.Errorf("miniflare did not start within 60 s\n%s", s.log.String())
	}
}

// Log is what Miniflare and workerd wrote: their errors, and the
// Workers' console output (an edge executor's log lines among it).
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
		<-done
	}
	os.RemoveAll(s.tmp)
}

// kill ends a Miniflare that did not start, and removes its files.
func (s *Server) kill() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	os.RemoveAll(s.tmp)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// maxLog bounds what a Server keeps of its log: a long run (stile bench)
// keeps the newest part.
const maxLog = 8 << 20

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len()+len(p) > maxLog {
		l.b.Next(min(l.b.Len(), l.b.Len()+len(p)-maxLog/2))
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
