package wasmbuild_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/wasmbuild"
)

func TestGoToolIsGOROOTsWhenItHasOneElseThePATHs(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GOROOT", root)
	require.Equal(t, "go", wasmbuild.GoTool(), "a GOROOT without a go command")

	goCmd := filepath.Join(root, "bin", "go")
	require.NoError(t, os.MkdirAll(filepath.Dir(goCmd), 0o755))
	require.NoError(t, os.WriteFile(goCmd, nil, 0o755))
	require.Equal(t, goCmd, wasmbuild.GoTool())

	t.Setenv("GOROOT", "")
	require.Equal(t, "go", wasmbuild.GoTool())
}
