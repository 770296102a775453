package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// TestWorkRunsTheHandlerPackage: `stile work --handlers PKG` builds a
// worker of PKG and runs its handlers on the jobs of a `stile dev` that
// pushes to none; Ctrl-C stops it cleanly.
func TestWorkRunsTheHandlerPackage(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	d := startDev(t, bin, root, "--data", t.TempDir(), "--token", testSecret, "--quiet", "./cmd/stile/testdata/partial/tenant")
	ctx := context.Background()
	acme := client.New(d.url, testSecret, nil).Tenant("acme")
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "greet", Args: json.RawMessage(`{"name":"ada"}`)})
	require.NoError(t, err)

	work := exec.Command(bin, "work", "--url", d.url, "--token", testSecret, "--tenant", "acme",
		"--handlers", "./cmd/stile/testdata/partial/handlers")
	work.Dir = root
	var out syncBuffer
	work.Stdout, work.Stderr = &out, &out
	require.NoError(t, work.Start())
	defer work.Process.Kill()
	require.Eventually(t, func() bool {
		got, err := acme.Job(ctx, j.ID)
		return err == nil && got.State == "completed" && string(got.Output) == `{"greeting":"hello, ada"}`
	}, 2*time.Minute, 50*time.Millisecond, "the handler ran:\n%s", &out)
	require.Contains(t, out.String(), "running jobs greet and reactions audit for acme")
	require.NoError(t, work.Process.Signal(syscall.SIGINT))
	require.NoError(t, work.Wait(), "stile work and its worker stop cleanly:\n%s", out.String())
}

// TestWorkWantsHandlersOutsideStilesModule: in a module of its own, `stile
// work` without --handlers says in one line what to pass.
func TestWorkWantsHandlersOutsideStilesModule(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/shop\n\ngo 1.26\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "work", "--token", "t")
	cmd.Dir = dir
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "it exits at once")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(string(b)), "\n")+1, "one line: %s", b)
	require.Contains(t, string(b), "--handlers ./path/to/handlers")
}
