package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/host/workerd"
)

// browser is what the console's tests need: Chromium (scripts/install-
// chromium installs Debian's) and the Node packages of host/workerd/npm
// (playwright-core drives it). Under CI=true both are required.
func browser(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		if ci() {
			t.Fatal("CI=true: chromium is not installed; .ci/run installs it with scripts/install-chromium")
		}
		t.Skip("chromium is not installed: run scripts/install-chromium")
	}
	dir, err := workerd.EnsureInstalled()
	if err != nil {
		if ci() {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skip(err)
	}
	return dir
}

// seedConsole makes a job that ran twice (its first attempt lost its
// lease and its late report was refused), a dead job and some events.
func seedConsole(t *testing.T, ten *client.Tenant) (twice, dead string) {
	ctx := context.Background()
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast", LeaseMs: 1500})
	require.NoError(t, err)
	c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-a", Limit: 1})
	require.NoError(t, err)
	claim := api.Claim{Worker: "worker-a", Attempt: c.Jobs[0].Attempt, LeaseToken: c.Jobs[0].LeaseToken}
	_, err = ten.Heartbeat(ctx, j.ID, claim)
	require.NoError(t, err)
	time.Sleep(1700 * time.Millisecond)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: claim, Outcome: api.OutcomeCompleted})
	require.ErrorIs(t, err, api.ErrStale)
	var c2 api.ClaimedJob
	require.Eventually(t, func() bool {
		r, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-b", Limit: 1, WaitMs: 2000})
		if err == nil && len(r.Jobs) == 1 {
			c2 = r.Jobs[0]
		}
		return c2.ID != ""
	}, 20*time.Second, 10*time.Millisecond)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-b", Attempt: c2.Attempt, LeaseToken: c2.LeaseToken},
		Outcome: api.OutcomeCompleted, Output: json.RawMessage(`{"sent":true}`)})
	require.NoError(t, err)

	d, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 1, Args: json.RawMessage(`{"to":"ada@example.com"}`)})
	require.NoError(t, err)
	dc, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-c", Limit: 1})
	require.NoError(t, err)
	_, err = ten.Report(ctx, d.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-c", Attempt: dc.Jobs[0].Attempt,
		LeaseToken: dc.Jobs[0].LeaseToken}, Outcome: api.OutcomeFailed, Error: "the provider answered 503"})
	require.NoError(t, err)
	for i := range 3 {
		_, err := ten.Append(ctx, "notes:n1", api.AppendRequest{Events: []api.NewEvent{{Type: "Noted", Data: json.RawMessage(`{"n":` + string(rune('1'+i)) + `}`)}}})
		require.NoError(t, err)
	}
	return j.ID, d.ID
}

// LongURL is an error's long word: a URL of 300 characters without a
// space.
var longURL = "https://api.example.com/v1/deliveries/" + strings.Repeat("a1b2c3d4e5", 25) + "/status/last"

// seedLongError makes a job whose first attempt failed with an error that
// holds longURL and whose second attempt completed.
func seedLongError(t *testing.T, ten *client.Tenant) string {
	ctx := context.Background()
	require.Len(t, longURL, 300)
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 3})
	require.NoError(t, err)
	c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-f", Kinds: []string{"test.echo"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, c.Jobs, 1)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-f", Attempt: c.Jobs[0].Attempt, LeaseToken: c.Jobs[0].LeaseToken},
		Outcome: api.OutcomeFailed, Error: "GET " + longURL + " answered 502"})
	require.NoError(t, err)
	var c2 api.ClaimedJob
	require.Eventually(t, func() bool { // after the backoff of about a second
		r, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-f", Kinds: []string{"test.echo"}, Limit: 1, WaitMs: 2000})
		if err == nil && len(r.Jobs) == 1 {
			c2 = r.Jobs[0]
		}
		return c2.ID != ""
	}, 20*time.Second, 10*time.Millisecond)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-f", Attempt: c2.Attempt, LeaseToken: c2.LeaseToken},
		Outcome: api.OutcomeCompleted})
	require.NoError(t, err)
	return j.ID
}

// seedRated makes two jobs of the kind whose rate key the module declares
// (one start an hour) and starts one: the other waits for the key, and is
// returned.
func seedRated(t *testing.T, ten *client.Tenant) string {
	ctx := context.Background()
	var ids []string
	for range 2 {
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.rated"})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-e", Kinds: []string{"test.rated"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, c.Jobs, 1, "one start an hour")
	require.Equal(t, ids[0], c.Jobs[0].ID)
	return ids[1]
}

// seedSearch makes four dead jobs of test.echo: three of customer 42
// (returned, joined by commas) and one of customer 7 (other), for the
// list's search by args and its bulk retry by that search.
func seedSearch(t *testing.T, ten *client.Tenant) (customer, other string) {
	ctx := context.Background()
	var ids []string
	for _, id := range []int{42, 7, 42, 42} {
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 1,
			Args: json.RawMessage(fmt.Sprintf(`{"customer":{"id":%d}}`, id))})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-s", Kinds: []string{"test.echo"}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, c.Jobs, 4, "no other test.echo job is ready")
	for _, j := range c.Jobs {
		_, err := ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-s", Attempt: j.Attempt, LeaseToken: j.LeaseToken},
			Outcome: api.OutcomeFailed, Error: "the customer's provider answered 503"})
		require.NoError(t, err)
	}
	return strings.Join([]string{ids[0], ids[2], ids[3]}, ","), ids[1]
}

// seedFleet makes dead test.fast jobs in two more tenants, prefix-acme
// (3) and prefix-globex (2), failed the same way, for the page of what is
// failing across tenants.
func seedFleet(t *testing.T, cl *client.Client, prefix string) {
	ctx := context.Background()
	for name, n := range map[string]int{prefix + "-acme": 3, prefix + "-globex": 2} {
		ten := cl.Tenant(name)
		for range n {
			_, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1, Queue: "mail"})
			require.NoError(t, err)
		}
		c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "worker-m", Queues: []string{"mail"}, Limit: 10})
		require.NoError(t, err)
		require.Len(t, c.Jobs, n)
		for i, j := range c.Jobs {
			_, err := ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "worker-m", Attempt: j.Attempt, LeaseToken: j.LeaseToken},
				Outcome: api.OutcomeFailed, Error: fmt.Sprintf("smtp.example.net answered 451 4.7.1 for message %d: try again later", 7000+i)})
			require.NoError(t, err)
		}
	}
}

// shots is where the console's screenshots are kept: $STILE_ARTIFACTS, or
// a directory of the temp dir that outlives the test.
func shots(t *testing.T) string {
	dir := os.Getenv("STILE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "stile-console-screenshots")
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("console screenshots: %s", dir)
	return dir
}

// seedWaiting makes tenant's job 1 a job of a kind no claim names, while
// a claim names another.
func seedWaiting(t *testing.T, ten *client.Tenant) {
	ctx := context.Background()
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.other"})
	require.NoError(t, err)
	require.Equal(t, "1", j.ID)
	_, err = ten.Claim(ctx, api.ClaimRequest{Worker: "worker-d", Kinds: []string{"test.echo"}, Limit: 1})
	require.NoError(t, err)
}

func browse(t *testing.T, nodeDir, mode, url, token, tenant, twice, dead, rated, long, customer, other, dir string, waiting ...string) {
	t.Helper()
	args := append([]string{filepath.Join("console", "browse.mjs"), mode, url, token, tenant, twice, dead, rated, long, customer, other, dir}, waiting...)
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "STILE_NODE_DIR="+nodeDir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var res struct {
		OK      bool `json:"ok"`
		Results []struct {
			OK   bool   `json:"ok"`
			What string `json:"what"`
		} `json:"results"`
	}
	require.NoError(t, json.Unmarshal(out[bytesLastLine(out):], &res), "%s", out)
	require.True(t, res.OK, "%s", out)
	for _, r := range res.Results {
		t.Logf("ok: %s", r.What)
	}
}

func bytesLastLine(b []byte) int {
	end := len(b)
	for end > 0 && (b[end-1] == '\n' || b[end-1] == '\r') {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i + 1
		}
	}
	return 0
}

// TestConsoleInABrowser: the console served by stile dev, in headless
// Chromium, against seeded data: sign in, every page, a job's timeline
// saying why it ran twice, a job its rate key holds back saying so, a
// retry seen without reloading, a paused queue,
// a search by args finding exactly its jobs, a bulk retry by that search
// run by the tenant with its progress shown to the end,
// a rebuilt projection, a phone's width without horizontal scroll, a long
// error wrapped at any width, what is failing across tenants and its
// retry in every tenant with the progress shown to the end.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel()
	nodeDir := browser(t)
	bin := stileCommand(t)
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--token", token, "--quiet", testTenant)
	dev.Dir = ".."
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	t.Cleanup(func() { dev.Process.Signal(syscall.SIGINT); dev.Wait() })
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	url := ""
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	require.NotEmpty(t, url)
	go io.Copy(io.Discard, stderr)
	twice, dead := seedConsole(t, client.New(url, token, nil).Tenant("console"))
	rated := seedRated(t, client.New(url, token, nil).Tenant("console"))
	long := seedLongError(t, client.New(url, token, nil).Tenant("console"))
	customer, other := seedSearch(t, client.New(url, token, nil).Tenant("console"))
	seedWaiting(t, client.New(url, token, nil).Tenant("console-waiting"))
	seedFleet(t, client.New(url, token, nil), "console")
	browse(t, nodeDir, "full", url, token, "console", twice, dead, rated, long, customer, other, shots(t), "console-waiting")
}

// TestConsoleFromWorkerd: the Worker serves the same console at /console,
// its pages load with data, and a job's page follows the job live from
// the tenant object's hibernatable WebSocket.
func TestConsoleFromWorkerd(t *testing.T) {
	t.Parallel()
	nodeDir := browser(t)
	w := startWorkerd(t)
	twice, dead := seedConsole(t, w.cl.Tenant("console-edge"))
	rated := seedRated(t, w.cl.Tenant("console-edge"))
	long := seedLongError(t, w.cl.Tenant("console-edge"))
	customer, other := seedSearch(t, w.cl.Tenant("console-edge"))
	seedWaiting(t, w.cl.Tenant("console-edge-waiting"))
	seedFleet(t, w.cl, "console-edge")
	browse(t, nodeDir, "load", w.url, token, "console-edge", twice, dead, rated, long, customer, other, t.TempDir(), "console-edge-waiting")
}
