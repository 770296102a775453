//go:build !js

package worker_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// The edge executor's worker runs on one thread (GOOS=js GOARCH=wasm): the
// tests that only mean something there (yield_js_test.go) run under Node.
func TestOneThreadUnderNode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("node is not installed: %v", err)
	}
	goTool := wasmbuild.GoTool()
	root, err := exec.Command(goTool, "env", "GOROOT").Output()
	require.NoError(t, err)
	cmd := exec.Command(goTool, "test", "-count=1", "-run", "OneThread",
		"-exec", filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", "go_js_wasm_exec"), ".")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}
