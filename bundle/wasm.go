package bundle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// DefaultPackage is the tenant module used when none is named.
const DefaultPackage = "github.com/stile-run/stile/cmd/stile/defaultapp"

// BuildWasm compiles the main package pkg (an import path or a ./relative
// directory, resolved in dir) to a WASI reactor at out. Go's build cache
// makes a rebuild of unchanged code take about a second.
func BuildWasm(ctx context.Context, dir, pkg, out string) error {
	if pkg == "" {
		pkg = DefaultPackage
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build %s: %w", pkg, err)
	}
	tmp := out + ".tmp"
	cmd := exec.CommandContext(ctx, goTool(), "build", "-buildmode=c-shared", "-trimpath",
		"-o", tmp, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("build %s for GOOS=wasip1 GOARCH=wasm: %w\n%s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	return os.Rename(tmp, out)
}

// goTool is the go command of the toolchain that built this program, if
// it is there, else the one on PATH.
func goTool() string {
	if root := goruntime.GOROOT(); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}
