package main_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	stiletoken "github.com/stile-run/stile/token"
)

// testSecret is the deployment secret of the tests that run stile dev.
const testSecret = "dev-secret-0123456789-abcdefghijklmn"

// TestDevRefusesAWeakSecret: stile dev does not start with a short or
// low-entropy secret, and says how to make a strong one.
func TestDevRefusesAWeakSecret(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	for _, args := range [][]string{{"--token", "dev-token"}, {"--token", testSecret, "--next-token", strings.Repeat("ab", 20)}} {
		cmd := exec.Command(bin, append([]string{"dev", "--addr", "127.0.0.1:0", "--data", t.TempDir()}, args...)...)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", b)
		require.Contains(t, string(b), "is too weak", "%s", b)
		require.Contains(t, string(b), "stile token secret")
		require.NotContains(t, string(b), "API ", "nothing was served")
	}
	cmd := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", t.TempDir())
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "STILE_TOKEN=short")
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "STILE_TOKEN is too weak: 5 characters")
}

// TestTokenSecretIsStrong: `stile token secret` prints a new strong secret
// each time.
func TestTokenSecretIsStrong(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	seen := map[string]bool{}
	for range 2 {
		out, err := exec.Command(bin, "token", "secret").Output()
		require.NoError(t, err)
		s := strings.TrimSpace(string(out))
		require.NoError(t, stiletoken.CheckSecret("the secret", s))
		require.GreaterOrEqual(t, len(s), 43, "32 random bytes")
		require.False(t, seen[s])
		seen[s] = true
	}
}

// TestTokenMintRefuses: a lifetime that is not positive, and a missing or
// weak secret, with words naming flags and variables that exist.
func TestTokenMintRefuses(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	mint := func(env string, args ...string) string {
		cmd := exec.Command(bin, append([]string{"token", "mint", "--scope", "acme", "--role", "reader", "--data", t.TempDir()}, args...)...)
		cmd.Env = append(os.Environ(), "STILE_TOKEN="+env)
		b, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", b)
		return string(b)
	}
	require.Contains(t, mint(testSecret, "--ttl", "0s"), "--ttl 0s: a token needs a positive lifetime")
	require.Contains(t, mint(testSecret, "--ttl", "-1h"), "--ttl -1h0m0s: a token needs a positive lifetime")
	out := mint("", "--ttl", "1h")
	require.Contains(t, out, "no secret: pass --secret, set STILE_TOKEN")
	require.NotContains(t, out, "--token", "mint has no --token flag")
	require.Contains(t, mint("weak", "--ttl", "1h"), "STILE_TOKEN is too weak")
	require.Contains(t, mint("", "--ttl", "1h", "--secret", "weak"), "--secret is too weak")
}

// TestDevHandlersRunAsAWorker: the handler code of `stile dev --handlers`
// holds a worker token, never the deployment's secret, and still runs
// its pushed work.
func TestDevHandlersRunAsAWorker(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	d := startDev(t, bin, root, "--data", t.TempDir(), "--token", testSecret, "--quiet", "--handlers", "./cmd/stile/testdata/partial/handlers",
		"./cmd/stile/testdata/partial/tenant")
	ctx := context.Background()
	acme := client.New(d.url, testSecret, nil).Tenant("acme")
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "greet", Args: json.RawMessage(`{"name":"ada","credential":true}`)})
	require.NoError(t, err)
	var done api.Job
	require.Eventually(t, func() bool {
		done, err = acme.Job(ctx, j.ID)
		return err == nil && done.State == "completed"
	}, time.Minute, 50*time.Millisecond, "the pushed job completes:\n%s", d.output())
	var out struct{ Credential string }
	require.NoError(t, json.Unmarshal(done.Output, &out))
	require.NotEqual(t, testSecret, out.Credential, "the handlers never hold the secret")
	c, err := stiletoken.Verify(testSecret, out.Credential, time.Now())
	require.NoError(t, err)
	require.Equal(t, api.RoleWorker, c.Role)
	// With it, the handler code cannot act as the admin.
	_, err = client.New(d.url, out.Credential, nil).Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "greet"})
	require.Equal(t, api.CodeForbidden, client.Code(err))
}
