//go:build !js

package worker_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// The edge executor's worker runs on one thread (GOOS=js GOARCH=wasm): the
// tests that only mean something there (yield_js_test.go) run under Node.
func TestOneThreadUnderNode(t *testing.T) {
	t.Parallel()
	out, err := wasmbuild.TestUnderNode(".", "OneThread")
	if errors.Is(err, wasmbuild.ErrNoNode) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	require.NoError(t, err, "%s", out)
	require.Equal(t, 1, strings.Count(out, "--- PASS"), "the one-thread tests ran:\n%s", out)
}
