package main_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	stiletoken "github.com/stile-run/stile/token"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// stile is the command, built once per test binary (linking it is most of
// a short test's time) into a directory TestMain removes.
func stile(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.bin = filepath.Join(built.dir, "stile")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	require.NoError(t, built.err, "%s", built.out)
	return built.bin
}

// built is the command stile built, or why it did not build.
var built struct {
	dir  string
	once sync.Once
	bin  string
	out  []byte
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "stile-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "a directory for the command:", err)
		os.Exit(1)
	}
	built.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestQuickStart runs the README's quick start: `stile dev` serves the
// built-in module, a job is enqueued, `stile work` runs it, and the server
// stops cleanly on Ctrl-C.
func TestQuickStart(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	data := t.TempDir()
	root, _ := filepath.Abs("../..")
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", data)
	dev.Dir = root
	dev.Env = append(os.Environ(), "STILE_TOKEN=")
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	defer dev.Process.Kill()

	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	tokenLine := regexp.MustCompile(`token\s+in (\S+) `)
	var url, tokenFile string
	var banner strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "/jobs/1") {
		banner.WriteString(sc.Text() + "\n")
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if m := tokenLine.FindStringSubmatch(sc.Text()); m != nil {
			tokenFile = m[1]
		}
	}
	require.NotEmpty(t, url, "stile dev printed its address")
	require.Equal(t, filepath.Join(data, "token"), tokenFile, "stile dev names the file of the generated token:\n%s", banner.String())
	go func() {
		for sc.Scan() {
		}
	}()
	kept, err := os.ReadFile(filepath.Join(data, "token"))
	require.NoError(t, err)
	token := strings.TrimSpace(string(kept))
	require.NoError(t, stiletoken.CheckSecret("the generated secret", token))
	require.NotContains(t, banner.String(), token, "the banner never prints the secret")

	ctx := context.Background()
	acme := client.New(url, token, nil).Tenant("acme")
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "echo", Args: []byte(`{"hello":"world"}`)})
	require.NoError(t, err)
	_, err = acme.Enqueue(ctx, api.EnqueueRequest{Kind: "nope"})
	require.Equal(t, api.CodeUnknownKind, client.Code(err))

	wctx, stopWork := context.WithTimeout(ctx, 60*time.Second)
	defer stopWork()
	work := exec.CommandContext(wctx, bin, "work", "--url", url, "--tenant", "acme", "--data", data)
	work.Dir = root
	work.Env = append(os.Environ(), "STILE_TOKEN=")
	require.NoError(t, work.Start(), "stile work finds the token in the data directory")
	require.Eventually(t, func() bool {
		got, err := acme.Job(ctx, j.ID)
		return err == nil && got.State == "completed" && string(got.Output) == `{"hello":"world"}`
	}, 30*time.Second, 50*time.Millisecond)
	require.NoError(t, work.Process.Signal(syscall.SIGINT))
	require.NoError(t, work.Wait(), "stile work stops cleanly")

	require.NoError(t, dev.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- dev.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "stile dev stops cleanly")
	case <-time.After(20 * time.Second):
		t.Fatal("stile dev did not stop on SIGINT")
	}
	_, err = os.Stat(filepath.Join(data, "tenants", "acme.sqlite"))
	require.NoError(t, err, "the tenant's data is a SQLite file in the data directory")
}

func TestBuildWritesTheWorkerBundle(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	out := t.TempDir()
	root, _ := filepath.Abs("../..")
	cmd := exec.Command(bin, "build", "--out", out, "--config", filepath.Join(out, "wrangler.toml"), "./examples/emails/tenant")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "gzip -9")
	for _, f := range []string{"tenant.wasm", "worker.mjs", "abi.mjs", "config.mjs", "wrangler.toml"} {
		_, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
	}
	config, err := os.ReadFile(filepath.Join(out, "wrangler.toml"))
	require.NoError(t, err)
	require.Contains(t, string(config), "main = \"worker.mjs\"\n", "the entry, relative to the config")
	cmd = exec.Command(bin, "build", "./no/such/pkg")
	cmd.Dir = root
	b, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "no/such/pkg", "a bad package is named in the error")
}

// TestDevWithHandlers: `stile dev --handlers` runs the built-in module's
// handler package natively in a child process that the tenants push work
// to: a job and a reaction run with no `stile work` and no polling.
func TestDevWithHandlers(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	data := t.TempDir()
	root, _ := filepath.Abs("../..")
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", data, "--token", testSecret,
		"--handlers", "./cmd/stile/defaultapp/handlers")
	dev.Dir = root
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	defer dev.Process.Kill()
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	pushedLine := regexp.MustCompile(`handlers of \S+ running: `)
	var url string
	pushed := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && (url == "" || !pushed) {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		pushed = pushed || pushedLine.MatchString(sc.Text())
	}
	require.NotEmpty(t, url, "stile dev printed its address")
	require.True(t, pushed, "stile dev started the executor")
	go func() {
		for sc.Scan() {
		}
	}()

	ctx := context.Background()
	acme := client.New(url, testSecret, nil).Tenant("acme")
	j, err := acme.Enqueue(ctx, api.EnqueueRequest{Kind: "echo", Args: []byte(`{"pushed":true}`)})
	require.NoError(t, err)
	var got api.Job
	require.Eventually(t, func() bool {
		got, err = acme.Job(ctx, j.ID)
		return err == nil && got.State == "completed"
	}, 30*time.Second, 20*time.Millisecond)
	require.JSONEq(t, `{"pushed":true}`, string(got.Output))
	_, err = acme.Command(ctx, api.Command{ID: "inc-1", Aggregate: "counter", AggregateID: "visits", Type: "Increment"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		rs, err := acme.Reactions(ctx)
		return err == nil && len(rs.Reactions) == 1 && rs.Reactions[0].Lag == 0 && rs.Reactions[0].Checkpoint > 0
	}, 30*time.Second, 20*time.Millisecond, "the log policy ran on a push")

	require.NoError(t, dev.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- dev.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "stile dev stops cleanly, with its executor")
	case <-time.After(30 * time.Second):
		t.Fatal("stile dev did not stop on SIGINT")
	}
}

// TestBuildWatchesTheModulesSize: a script over Cloudflare's free plan
// (without edge handlers) is a warning that names the plan it needs, the
// module's heaviest packages and the cause (net/http linked); one within
// it says so; --max-size makes any bound an error, and writes nothing.
func TestBuildWatchesTheModulesSize(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	root, _ := filepath.Abs("../..")
	out := t.TempDir()
	cmd := exec.Command(bin, "build", "--out", out, "--config", filepath.Join(out, "wrangler.toml"), "./cmd/stile/testdata/heavy")
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "warning: the script needs the Workers Paid plan: over the free plan's 3000000 bytes compressed, within the paid plan's 10000000, and the tenant module is most of it")
	require.Regexp(t, `\d+  net/http\n`, string(b), "the package that made it heavy is named")
	require.Contains(t, string(b), "The module links net/http: a handler package or an HTTP client is in its imports.")
	require.Contains(t, string(b), "tenant.wasm", "and the bundle is written")

	out = t.TempDir()
	cmd = exec.Command(bin, "build", "--out", out, "--config", filepath.Join(out, "wrangler.toml"), "./e2e/testapp/tenant")
	cmd.Dir = root
	b, err = cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "The script fits Cloudflare's free plan (3000000 bytes compressed) and the paid plan (10000000).")
	require.NotContains(t, string(b), "warning")

	out = t.TempDir()
	cmd = exec.Command(bin, "build", "--out", out, "--config", filepath.Join(out, "wrangler.toml"), "--max-size", "500000", "./e2e/testapp/tenant")
	cmd.Dir = root
	b, err = cmd.CombinedOutput()
	require.Error(t, err, "%s", b)
	require.Contains(t, string(b), "over --max-size 500000")
	require.Contains(t, string(b), "github.com/stile-run/stile/runtime")
	_, err = os.Stat(filepath.Join(out, "worker.mjs"))
	require.True(t, os.IsNotExist(err), "a module over --max-size writes no bundle")
}

// TestNewProjectWorksOutsideStilesTree: stile new writes a project in a
// module of its own (a replace to this checkout) whose tests pass at
// once, and whose go tool stile builds the bundle, writes its wrangler
// config and serves it with stile dev, with that module's go.mod. With
// STILE_TEST_WRANGLER=1 the bundle also goes through go tool stile deploy
// --dry-run (which installs wrangler, and Node 22 if need be, from npm).
func TestNewProjectWorksOutsideStilesTree(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	dir := filepath.Join(t.TempDir(), "shop")
	out, err := exec.Command(bin, "new", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "go test ./...")
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	root, _ := filepath.Abs("../..")
	require.Contains(t, string(gomod), "replace github.com/stile-run/stile => "+filepath.ToSlash(root))
	require.Contains(t, string(gomod), "tool github.com/stile-run/stile/cmd/stile")
	for _, f := range []string{"README.md", ".gitignore", "app/app.go", "app/app_test.go", "tenant/main.go", "handlers/handlers.go", "handlers/handlers_test.go"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	again, err := exec.Command(bin, "new", dir).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(again), "is not empty")

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), b)
		return string(b)
	}
	tests := run("test", "-v", "./...")
	require.Contains(t, tests, "ok  \texample.com/shop/app")
	require.Contains(t, tests, "ok  \texample.com/shop/handlers")
	// Its tests give the handlers fake dependencies (handlers.With), not
	// the environment, so every one of them runs in parallel.
	for _, test := range []string{"TestCheckoutStoresTheCustomerAndEnqueuesTheReceipt", "TestAnOrderIsNotifiedOnceAndProjected",
		"TestEveryTenantGetsTheDailyDigest", "TestNotifySendsTheDeliverysKey"} {
		require.Contains(t, tests, "=== PAUSE "+test, "%s runs in parallel", test)
	}

	built := run("tool", "stile", "build", "--handlers", "./handlers", "./tenant")
	require.Contains(t, built, "wrote wrangler.toml")
	config, err := os.ReadFile(filepath.Join(dir, "wrangler.toml"))
	require.NoError(t, err)
	require.Contains(t, string(config), "name = \"shop\"\nmain = \"build/edge.mjs\"")
	require.Contains(t, string(config), "service = \"shop\"")
	for _, f := range []string{"tenant.wasm", "executor.wasm", "edge.mjs", "worker.mjs", "shim.mjs"} {
		_, err := os.Stat(filepath.Join(dir, "build", f))
		require.NoError(t, err, f)
	}
	// The executor is built without net/http's HTTP/2, which never runs at
	// the edge (wasmbuild.EdgeTags): Go's own function table, kept in a
	// stripped build, names the transport but none of HTTP/2's code.
	executor, err := os.ReadFile(filepath.Join(dir, "build", "executor.wasm"))
	require.NoError(t, err)
	require.True(t, bytes.Contains(executor, []byte("net/http.(*Transport).roundTrip")), "the function table names net/http's transport")
	require.False(t, bytes.Contains(executor, []byte("net/http.(*http2ClientConn)")), "the edge executor links net/http's HTTP/2")
	// That the user's own keys survive the next build is writeConfig's
	// (TestWriteConfigKeepsTheUsersKeys): a second build here would link
	// both modules again to say so.

	// stile dev serves the project's module.
	dev := exec.Command("go", "tool", "stile", "dev", "--addr", "127.0.0.1:0", "--token", testSecret, "--quiet", "./tenant")
	dev.Dir = dir
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	defer func() { dev.Process.Signal(syscall.SIGINT); dev.Wait() }()
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	url := ""
	var printed strings.Builder
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		printed.WriteString(sc.Text() + "\n")
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	require.NotEmpty(t, url, "stile dev printed its address:\n%s", printed.String())
	res, err := client.New(url, testSecret, nil).Tenant("acme").Command(context.Background(), api.Command{ID: "p1", Aggregate: "order",
		AggregateID: "o-1", Type: "Place", Data: []byte(`{"total":500,"email":"ada@example.com"}`)})
	require.NoError(t, err)
	require.Equal(t, "order:o-1", res.Stream)

	// go tool stile work runs the project's handlers: its notify policy
	// calls the provider for the placed order. Without --handlers it says
	// what to pass.
	noHandlers := exec.Command("go", "tool", "stile", "work", "--token", testSecret, "--url", url)
	noHandlers.Dir = dir
	refused, err := noHandlers.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(refused), "pass --handlers ./path/to/handlers")
	notified := make(chan string, 10)
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case notified <- r.URL.Path:
		default:
		}
		w.Write([]byte(`{"id":"n-1"}`))
	}))
	defer provider.Close()
	work := exec.Command("go", "tool", "stile", "work", "--token", testSecret, "--url", url, "--tenant", "acme", "--handlers", "./handlers")
	work.Dir = dir
	work.Env = append(os.Environ(), "PROVIDER_URL="+provider.URL)
	var workOut syncBuffer
	work.Stdout, work.Stderr = &workOut, &workOut
	require.NoError(t, work.Start())
	defer work.Process.Kill()
	select {
	case path := <-notified:
		require.Equal(t, "/notifications", path)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the project's handlers never called the provider:\n%s", workOut.String())
	}
	require.NoError(t, work.Process.Signal(syscall.SIGINT))
	require.NoError(t, work.Wait(), "go tool stile work stops cleanly:\n%s", workOut.String())

	if os.Getenv("STILE_TEST_WRANGLER") != "1" {
		t.Log("set STILE_TEST_WRANGLER=1 to run wrangler deploy --dry-run on the bundle")
		return
	}
	dry := exec.Command("go", "tool", "stile", "deploy", "--dry-run", "--outdir", t.TempDir())
	dry.Dir = dir
	b, err := dry.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "env.EXECUTOR (shop)")
	t.Logf("wrangler deploy --dry-run:\n%s", b)
}
