//go:build !js

package jsfetch

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

// The glue between Go's net/http and the platform's fetch only builds for
// GOOS=js: its tests (jsfetch_js_test.go) run under Node, against a fetch
// of their own making.
func TestTheGlueUnderNode(t *testing.T) {
	t.Parallel()
	out, err := wasmbuild.TestUnderNode(".", ".")
	if errors.Is(err, wasmbuild.ErrNoNode) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	require.NoError(t, err, "%s", out)
	require.GreaterOrEqual(t, strings.Count(out, "--- PASS"), 6, "the glue's tests ran:\n%s", out)
	require.NotContains(t, out, "--- SKIP")
}
