package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/schema"
	"github.com/stile-run/stile/stiletest"
)

// seedRanTwice makes a job whose first attempt heartbeat once, lost its
// lease and had its late report refused, and whose second completed.
func seedRanTwice(t *testing.T, ten *client.Tenant, pass func(time.Duration)) string {
	ctx := context.Background()
	j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast", LeaseMs: 2000})
	require.NoError(t, err)
	c, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w1", Limit: 1})
	require.NoError(t, err)
	claim := api.Claim{Worker: "w1", Attempt: c.Jobs[0].Attempt, LeaseToken: c.Jobs[0].LeaseToken}
	_, err = ten.Heartbeat(ctx, j.ID, claim)
	require.NoError(t, err)
	pass(2500 * time.Millisecond)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: claim, Outcome: api.OutcomeCompleted})
	require.ErrorIs(t, err, api.ErrStale)
	var c2 api.ClaimedJob
	require.Eventually(t, func() bool {
		pass(250 * time.Millisecond)
		r, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w2", Limit: 1})
		if err == nil && len(r.Jobs) == 1 {
			c2 = r.Jobs[0]
		}
		return c2.ID != ""
	}, 20*time.Second, 50*time.Millisecond)
	_, err = ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "w2", Attempt: c2.Attempt, LeaseToken: c2.LeaseToken},
		Outcome: api.OutcomeCompleted, Output: json.RawMessage(`{"ok":true}`)})
	require.NoError(t, err)
	return j.ID
}

type cli struct {
	bin, url, token string
}

// ten is a client of tenant on the host the CLI talks to.
func (c cli) ten(tenant string) *client.Tenant { return client.New(c.url, c.token, nil).Tenant(tenant) }

// run runs stile with args and returns its stdout, stderr and exit code.
func (c cli) run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(os.Environ(), "STILE_URL="+c.url, "STILE_TOKEN="+c.token, "STILE_TENANT=acme")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return out.String(), errOut.String(), code
}

// operate runs the operator commands against a host with seeded data.
func operate(t *testing.T, c cli, ten *client.Tenant, pass func(time.Duration)) {
	id := seedRanTwice(t, ten, pass)
	ctx := context.Background()
	dead, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", MaxAttempts: 1})
	require.NoError(t, err)
	cl, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w3", Limit: 1})
	require.NoError(t, err)
	_, err = ten.Report(ctx, dead.ID, api.ReportRequest{Claim: api.Claim{Worker: "w3", Attempt: cl.Jobs[0].Attempt,
		LeaseToken: cl.Jobs[0].LeaseToken}, Outcome: api.OutcomeFailed, Error: "boom"})
	require.NoError(t, err)

	out, _, code := c.run(t, "jobs", "show", id)
	require.Equal(t, 0, code)
	require.Regexp(t, `why: ran 2 times: attempt 1 \(w1\) lost its lease, noticed by (the alarm|a request); the fence refused its report lease_expired; attempt 2 \(w2\) completed`, out)
	require.Regexp(t, `(?m)^1\s+w1\s+.*\s1\s+\d{4}-\d\d-\d\d .*lease_expired`, out, "attempt 1 with its heartbeat")
	require.Regexp(t, `(?m)^2\s+w2\s+.*completed\s+report`, out)
	require.Contains(t, out, "refused by the fence:")
	require.Regexp(t, `report\s+w1\s+1\s+completed\s+lease_expired`, out, "the refused report with its code")

	out, _, code = c.run(t, "jobs", "list", "--state", "dead")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^`+dead.ID+`\s+test.echo\s+default\s+dead\s+1/1\s+.*boom`, out)

	out, _, code = c.run(t, "jobs", "retry", dead.ID)
	require.Equal(t, 0, code)
	require.Equal(t, "job "+dead.ID+": available\n", out)
	_, errOut, code := c.run(t, "jobs", "retry", id)
	require.Equal(t, 3, code, "refused: a completed job is not retried")
	require.Contains(t, errOut, "not_retryable")
	_, errOut, code = c.run(t, "jobs", "show", "999999")
	require.Equal(t, 4, code, "not found")
	require.Contains(t, errOut, "does not exist")
	_, _, code = c.run(t, "jobs", "frobnicate", "1")
	require.Equal(t, 2, code, "usage")
	_, _, code = cli{c.bin, "http://127.0.0.1:1", c.token}.run(t, "jobs", "list")
	require.Equal(t, 5, code, "unreachable")

	out, _, code = c.run(t, "jobs", "show", id, "--json")
	require.Equal(t, 0, code)
	var j api.Job
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	require.Contains(t, j.RanAgain, "ran 2 times")

	out, _, code = c.run(t, "queues")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^default\s+1\s+0`, out, "the retried job is available")
	out, _, code = c.run(t, "queues", "pause", "default")
	require.Equal(t, 0, code)
	require.Equal(t, "queue default: paused\n", out)
	out, _, _ = c.run(t, "queues")
	require.Regexp(t, `(?m)^default\s+1\s+0\s+0\s+0\s+0\s+paused`, out)
	_, _, code = c.run(t, "queues", "resume", "default")
	require.Equal(t, 0, code)

	// A job of a kind no claim names says it waits for a handler.
	waiting := c.ten("acme-waiting")
	other, err := waiting.Enqueue(ctx, api.EnqueueRequest{Kind: "test.other"})
	require.NoError(t, err)
	_, err = waiting.Claim(ctx, api.ClaimRequest{Worker: "w4", Kinds: []string{"test.echo"}, Limit: 1})
	require.NoError(t, err)
	out, _, code = c.run(t, "queues", "--tenant", "acme-waiting")
	require.Equal(t, 0, code)
	require.Contains(t, out, "queue other: no executor handles kind test.other")
	out, _, code = c.run(t, "jobs", "show", other.ID, "--tenant", "acme-waiting")
	require.Equal(t, 0, code)
	require.Contains(t, out, `waiting: no executor handles kind "test.other": the executors that claimed since this tenant's instance started take test.echo`)

	out, _, code = c.run(t, "tenants")
	require.Equal(t, 0, code)
	require.Regexp(t, `MODULE\s+STILE SCHEMA\s+MODULE SCHEMA\s+READY\s+FAILED`, out)
	stile := strconv.Itoa(len(schema.Migrations()))
	require.Regexp(t, `(?m)^acme\s+\S+ \S+\s+\S+ \S+\s+\S+\s+`+stile+`\s+1\s+`, out, "the versions of Stile's tables and the module's")
	out, _, code = c.run(t, "migrate")
	require.Equal(t, 0, code)
	require.Equal(t, "[1/1] acme: stile "+stile+"/"+stile+", module 1/1\n", out, "every tenant of the directory, nothing pending")
	out, _, code = c.run(t, "migrate", "--tenant", "acme", "--json")
	require.Equal(t, 0, code)
	var sts []api.Status
	require.NoError(t, json.Unmarshal([]byte(out), &sts), out)
	require.Equal(t, int64(len(schema.Migrations())), sts[0].StileSchema.Version)
	file := filepath.Join(t.TempDir(), "acme.jsonl")
	_, errOut, code = c.run(t, "export", "--out", file)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^exported tenant acme: 1 pages, \d+ rows\n$`, errOut)
	out, errOut, code = c.run(t, "import", "--tenant", "acme-copy", "--in", file)
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^imported tenant acme-copy: 1 pages, \d+ rows\n$`, out)
	out, _, code = c.run(t, "jobs", "list", "--tenant", "acme-copy")
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^`+dead.ID+`\s+test.echo`, out, "the copy holds the jobs")
	_, errOut, code = c.run(t, "import", "--tenant", "acme-copy", "--in", file)
	require.Equal(t, 3, code, "an import into a tenant that holds rows is refused: %s", errOut)
	require.Contains(t, errOut, "an import goes into an empty tenant")
	out, _, code = c.run(t, "usage", "--tenant=")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `TENANT\s+DAY\s+REQUESTS`, out, "the fleet's view, from the directory")
	require.Regexp(t, `(?m)^acme\s`, out)
	out, _, code = c.run(t, "usage", "--tenant", "acme")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `(?m)^total\s+[1-9]\d*\s+\d+\s+[1-9]\d*\s+[1-9]\d*\s`, out, "requests, alarms, rows read and written")
	require.Contains(t, out, "budget: none")
	out, _, code = c.run(t, "budget", "--rows-written", "1000000")
	require.Equal(t, 0, code, out)
	require.Equal(t, "tenant acme: budget rows written per day 1000000, requests per day no limit (its own)\n", out)
	out, _, code = c.run(t, "budget", "--requests", "1")
	require.Equal(t, 0, code, out)
	require.Equal(t, "tenant acme: budget rows written per day 1000000, requests per day 1 (its own)\n", out, "the figure not given stays")
	out, _, code = c.run(t, "usage", "--tenant", "acme")
	require.Equal(t, 0, code)
	require.Regexp(t, `refusing new work: past requests_per_day 1; \d+ used today, until \d{4}-\d\d-\d\d 00:00:00.000`, out)
	_, err = ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.Equal(t, api.CodeBudgetExceeded, client.Code(err))
	out, _, code = c.run(t, "budget", "--clear")
	require.Equal(t, 0, code, out)
	require.Equal(t, "tenant acme: budget none (the module's)\n", out)
	_, errOut, code = c.run(t, "budget", "--requests", "-1")
	require.Equal(t, 3, code, "refused: %s", errOut)
	require.Contains(t, errOut, "requests_per_day -1 must be 0 (no limit) or within")
	_, _, code = c.run(t, "budget")
	require.Equal(t, 2, code, "usage: neither a figure nor --clear")
	_, _, code = c.run(t, "usage", "--tenant=", "--from", "2026-01-01")
	require.Equal(t, 2, code, "usage: days need a tenant")
	out, _, code = c.run(t, "reactions")
	require.Equal(t, 0, code)
	require.Contains(t, out, "REACTION")
	out, _, code = c.run(t, "projections")
	require.Equal(t, 0, code)
	require.Contains(t, out, "notes")
	// A query waits for its projection to apply the append it names.
	appended, err := ten.Append(ctx, "cli", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{"n":7}`)}}})
	require.NoError(t, err)
	out, errOut, code = c.run(t, "query", "notes_of", "stream=cli", "--min-seq", strconv.FormatInt(appended.LastSeq, 10))
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?s)^\{"seq":\d+,"n":7,"generation":1\}\n\(1 rows\) projection notes is current at \d+\n$`, out)
	_, errOut, code = c.run(t, "query", "notes_of", "stream")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `"stream" is not param=value`)
	_, errOut, code = c.run(t, "query", "notes_of")
	require.Equal(t, 3, code, "refused by the tenant")
	require.Contains(t, errOut, `missing query parameter "stream"`)
	out, _, code = c.run(t, "events")
	require.Equal(t, 0, code)
	require.Contains(t, out, "SEQ")

	operateRates(t, c)
}

// operateRates sets, lists and deletes rate limits with stile rates, and
// shows a job its key holds back.
func operateRates(t *testing.T, c cli) {
	ctx := context.Background()
	ten := c.ten("acme-rates")
	rates := func(args ...string) (string, string, int) {
		return c.run(t, append([]string{"rates"}, append(args, "--tenant", "acme-rates")...)...)
	}
	out, errOut, code := rates("set", "api", "2", "1h")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "rate key api: 2 starts per 1h (the tenant's)\n", out)
	var ids []string
	for range 3 {
		j, err := ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", RateKey: "api"})
		require.NoError(t, err)
		ids = append(ids, j.ID)
	}
	cl, err := ten.Claim(ctx, api.ClaimRequest{Worker: "w5", Limit: 10})
	require.NoError(t, err)
	require.Len(t, cl.Jobs, 2, "two starts an hour")
	_, err = ten.Claim(ctx, api.ClaimRequest{Worker: "w5", Limit: 10})
	require.NoError(t, err)

	out, errOut, code = rates()
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^KEY\s+LIMIT\s+SOURCE\s+IN WINDOW\s+OPENS AT\s+STARTED\s+LIMITED\n`+
		`api\s+2 per 1h\s+tenant\s+2\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+2\s+1\n$`, out,
		"two starts in the window, closed until a time, the third job waited once")
	out, _, code = rates("--json")
	require.Equal(t, 0, code)
	var rs api.RatesResponse
	require.NoError(t, json.Unmarshal([]byte(out), &rs), out)
	require.Len(t, rs.Rates, 1)
	r := rs.Rates[0]
	require.NotNil(t, r.OpenAt)
	require.Equal(t, api.Rate{Key: "api", Limit: 2, PeriodMs: time.Hour.Milliseconds(), Source: "tenant", InWindow: 2,
		OpenAt: r.OpenAt, Started: 2, Limited: 1}, r)
	out, _, code = c.run(t, "jobs", "show", ids[2], "--tenant", "acme-rates")
	require.Equal(t, 0, code)
	require.Contains(t, out, "\nrate key: api\n")
	require.Regexp(t, `waiting: rate limited by key "api" \(2 starts per 3600000 ms\) until \d{4}-\d\d-\d\dT`, out)

	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"set", "api", "two", "1s"}, 2, `limit "two" is not a whole number of starts`},
		{[]string{"set", "api", "2", "1"}, 2, `period "1" is not a duration of whole milliseconds, such as 500ms, 1s, 1m or 1h`},
		{[]string{"set", "api", "2", "0s"}, 2, `period "0s" is not a duration`},
		{[]string{"set", "api", "2", "1500us"}, 2, `period "1500us" is not a duration of whole milliseconds`},
		{[]string{"set", "api", "2"}, 2, "stile rates set KEY LIMIT PERIOD: e.g. stile rates set api 100 1s"},
		{[]string{"delete"}, 2, "stile rates delete KEY"},
		{[]string{"pause", "api"}, 2, "stile rates pause: use set or delete, or nothing to list"},
		{[]string{"set", "api", "0", "1s"}, 3, `invalid_request: rate key "api": limit 0 is outside 1-1000000`},
		{[]string{"set", "api", "2", "25h"}, 3, `rate key "api": period_ms 90000000 is outside 1-86400000 (a day)`},
		{[]string{"set", "bad key", "2", "1s"}, 3, `rate key "bad key" is invalid`},
		{[]string{"delete", "api"}, 3, `rate_key_in_use: rate key "api" is named by job `},
		{[]string{"delete", "nope"}, 4, `rate key "nope" has no limit`},
	} {
		out, errOut, code := rates(bad.args...)
		require.Equal(t, bad.code, code, "%v: %s", bad.args, errOut)
		require.Empty(t, out, bad.args)
		require.Contains(t, errOut, bad.says, bad.args)
		require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
	}

	// A key the module declares goes back to its default.
	_, err = ten.Enqueue(ctx, api.EnqueueRequest{Kind: "test.rated"})
	require.NoError(t, err)
	out, _, code = rates("set", "hourly", "5", "90m")
	require.Equal(t, 0, code)
	require.Equal(t, "rate key hourly: 5 starts per 1h30m (the tenant's)\n", out)
	out, _, code = rates("delete", "hourly")
	require.Equal(t, 0, code)
	require.Equal(t, "rate key hourly: back to 1 start per 1h (the module's)\n", out)

	// A key of the tenant's own is removed once no job waits on it.
	for _, j := range cl.Jobs {
		_, err := ten.Report(ctx, j.ID, api.ReportRequest{Claim: api.Claim{Worker: "w5", Attempt: j.Attempt, LeaseToken: j.LeaseToken},
			Outcome: api.OutcomeCompleted})
		require.NoError(t, err)
	}
	_, err = ten.Cancel(ctx, ids[2], "")
	require.NoError(t, err)
	out, _, code = rates("delete", "api", "--json")
	require.Equal(t, 0, code)
	require.JSONEq(t, `{"key": "api", "removed": true}`, out)
	out, _, code = rates()
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^hourly\s+1 per 1h\s+module\s+0\s+-\s+0\s+0\n$`, out, "only the module's key is left")
	require.NotContains(t, out, "api")
}

func TestOperatorCommandsAgainstTheGoHost(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	operate(t, cli{bin, h.URL, h.Token()}, h.Tenant("acme"), func(d time.Duration) { h.Advance(d) })
}

var workerdHost = &stiletest.Workerd{Wasm: func(tb testing.TB) []byte {
	return stiletest.BuildWasm(tb, "github.com/stile-run/stile/e2e/testapp/tenant")
}}

func TestOperatorCommandsAgainstWorkerd(t *testing.T) {
	bin := stile(t)
	url := workerdHost.Start(t)
	t.Cleanup(workerdHost.Close)
	operate(t, cli{bin, url, stiletest.DefaultToken}, workerdHost.Client().Tenant("acme"), func(d time.Duration) { time.Sleep(d) })
}

// TestTokensMintedAndRevokedAgainstStileDev: a token stile token mint
// signs opens its tenant with its role; stile token revoke shuts it at once.
func TestTokensMintedAndRevokedAgainstStileDev(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	data := t.TempDir()
	dev := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", data, "--quiet")
	dev.Env = append(os.Environ(), "STILE_TOKEN=")
	dev.Dir = "../.."
	stderr, err := dev.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, dev.Start())
	defer func() { dev.Process.Signal(os.Interrupt); dev.Wait() }()
	url := ""
	sc := bufio.NewScanner(stderr)
	apiLine := regexp.MustCompile(`API\s+(http://\S+)/v1/t/`)
	for url == "" && sc.Scan() {
		if m := apiLine.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	// A path with an empty or dot segment is refused, never redirected
	// (the mux's 307 led a client to create a tenant named "jobs").
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/v1/t//jobs", "/v1/t/acme/../jobs", "/v1/t/acme/./jobs", "//metrics", "/console/../v1/t/x/jobs"} {
		req, err := http.NewRequest("POST", url+path, strings.NewReader(`{"kind":"echo"}`))
		require.NoError(t, err)
		resp, err := noRedirect.Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s: %s", path, b)
		require.Equal(t, string(api.CheckPath(path).AppendJSON(nil)), string(b), path)
	}
	// Tenants exist once created: stile tenants create makes acme, once.
	for _, want := range []string{"created tenant acme", "tenant acme exists already"} {
		create := exec.Command(bin, "tenants", "create", "acme", "--url", url, "--data", data)
		create.Env = append(os.Environ(), "STILE_TOKEN=")
		out, err := create.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Equal(t, want+"\n", string(out))
	}
	mint := exec.Command(bin, "token", "mint", "--scope", "acme", "--role", "reader", "--ttl", "1h", "--id", "r1", "--data", data)
	mint.Env = append(os.Environ(), "STILE_TOKEN=")
	out, err := mint.Output()
	require.NoError(t, err)
	tok := strings.TrimSpace(string(out))
	require.True(t, strings.HasPrefix(tok, "stile2."))
	ten := client.New(url, tok, nil).Tenant("acme")
	_, err = ten.Status(context.Background())
	require.NoError(t, err, "a reader reads")
	_, err = ten.Enqueue(context.Background(), api.EnqueueRequest{Kind: "echo"})
	require.Equal(t, api.CodeForbidden, client.Code(err))
	_, err = client.New(url, tok, nil).Tenant("globex").Status(context.Background())
	require.Equal(t, api.CodeForbidden, client.Code(err), "only its tenant")
	_, err = client.New(url, tok, nil).Tenant("acme").Create(context.Background())
	require.Equal(t, api.CodeForbidden, client.Code(err), "a reader creates no tenant")

	rev := exec.Command(bin, "token", "revoke", "r1", "--data", data)
	out, err = rev.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "STILE_REVOKED")
	_, err = ten.Status(context.Background())
	require.Equal(t, api.CodeUnauthorized, client.Code(err))
	require.ErrorContains(t, err, "the token was revoked")

	// A revoked list that cannot be read fails closed: no scoped token
	// passes (a revoked one must not), the secret still does.
	mint = exec.Command(bin, "token", "mint", "--scope", "acme", "--role", "reader", "--ttl", "1h", "--id", "r2", "--data", data)
	mint.Env = append(os.Environ(), "STILE_TOKEN=")
	out, err = mint.Output()
	require.NoError(t, err)
	r2 := client.New(url, strings.TrimSpace(string(out)), nil).Tenant("acme")
	_, err = r2.Status(context.Background())
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(data, "revoked")))
	_, err = r2.Status(context.Background())
	require.Equal(t, api.CodeRevocationsUnavailable, client.Code(err))
	require.ErrorContains(t, err, "the list of revoked tokens cannot be read")
	secret, err := os.ReadFile(filepath.Join(data, "token"))
	require.NoError(t, err)
	_, err = client.New(url, strings.TrimSpace(string(secret)), nil).Tenant("acme").Status(context.Background())
	require.NoError(t, err, "the secret still works")
}

// TestSchedulesCommand sets, lists, pauses, resumes and deletes schedules
// with stile schedules; the module's own refuse every change.
func TestSchedulesCommand(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	app := testapp.App().Schedule(runtime.Schedule{Name: "module-hourly", Cron: "@hourly", Job: api.EnqueueRequest{Kind: "test.echo", Queue: "reports"}})
	h := stiletest.New(t, stiletest.Config{App: app})
	c := cli{bin, h.URL, h.Token()}
	ctx := context.Background()
	schedules := func(args ...string) (string, string, int) {
		return c.run(t, append([]string{"schedules"}, args...)...)
	}

	out, errOut, code := schedules("set", "nightly", "0 3 * * *", "--kind", "test.echo", "--args", `{"n":1}`, "--queue", "batch")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^schedule nightly: active, next at \d{4}-\d\d-\d\d 03:00:00\.000\n$`, out)
	s, err := h.Tenant("acme").Schedule(ctx, "nightly")
	require.NoError(t, err)
	require.JSONEq(t, `{"kind":"test.echo","args":{"n":1},"queue":"batch"}`, string(s.Job))

	out, errOut, code = schedules()
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^SCHEDULE\s+CRON\s+KIND\s+QUEUE\s+STATE\s+SOURCE\s+NEXT AT\s+LAST AT\s+LAST JOB\s+LAST ERROR$`, out)
	require.Regexp(t, `(?m)^module-hourly\s+@hourly\s+test\.echo\s+reports\s+active\s+module\s+\d{4}-\d\d-\d\d \d\d:00:00\.000\s+-\s+-\s+-$`, out)
	require.Regexp(t, `(?m)^nightly\s+0 3 \* \* \*\s+test\.echo\s+batch\s+active\s+tenant\s+\d{4}-\d\d-\d\d 03:00:00\.000\s+-\s+-\s+-$`, out)

	out, errOut, code = schedules("pause", "nightly")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "schedule nightly: paused\n", out)
	s, err = h.Tenant("acme").Schedule(ctx, "nightly")
	require.NoError(t, err)
	require.True(t, s.Paused)
	require.JSONEq(t, `{"kind":"test.echo","args":{"n":1},"queue":"batch"}`, string(s.Job), "a pause keeps the job as it was")
	out, _, code = schedules()
	require.Equal(t, 0, code)
	require.Regexp(t, `(?m)^nightly\s+0 3 \* \* \*\s+test\.echo\s+batch\s+paused\s+tenant\s+-\s`, out)
	out, _, code = schedules("resume", "nightly", "--json")
	require.Equal(t, 0, code)
	var resumed api.Schedule
	require.NoError(t, json.Unmarshal([]byte(out), &resumed), out)
	require.False(t, resumed.Paused)
	require.Equal(t, "nightly", resumed.Name)

	// A schedule made paused enqueues nothing until resumed.
	out, errOut, code = schedules("set", "later", "@every 1m", "--kind", "test.echo", "--paused")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "schedule later: paused\n", out)
	h.Advance(2 * time.Minute)
	l, err := h.Tenant("acme").List(ctx, "", "", "test.echo", "", 10)
	require.NoError(t, err)
	require.Empty(t, l.Jobs, "a paused schedule enqueues nothing")
	out, _, code = schedules("resume", "later")
	require.Equal(t, 0, code)
	require.Regexp(t, `^schedule later: active, next at \d{4}-`, out)
	h.Advance(time.Minute)
	l, err = h.Tenant("acme").List(ctx, "", "", "test.echo", "", 10)
	require.NoError(t, err)
	require.Len(t, l.Jobs, 1, "resumed, it enqueues its period")
	require.Contains(t, l.Jobs[0].Tags, "schedule:later")

	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"pause", "module-hourly"}, 3, `module_schedule: schedule "module-hourly" is declared by the tenant module`},
		{[]string{"delete", "module-hourly"}, 3, `module_schedule: schedule "module-hourly" is declared by the tenant module`},
		{[]string{"set", "module-hourly", "@daily", "--kind", "test.echo"}, 3, "module_schedule"},
		{[]string{"set", "bad", "61 * * * *", "--kind", "test.echo"}, 3, "invalid_request"},
		{[]string{"pause", "nope"}, 4, `nope`},
		{[]string{"delete", "nope"}, 4, `nope`},
		{[]string{"set", "x", "@daily"}, 2, "stile schedules set NAME CRON --kind K"},
		{[]string{"set", "x", "@daily", "--kind", "test.echo", "--args", "{"}, 2, `--args "{" is not JSON`},
		{[]string{"pause"}, 2, "stile schedules pause NAME"},
		{[]string{"frobnicate"}, 2, "stile schedules frobnicate: use set, delete, pause or resume, or nothing to list"},
	} {
		out, errOut, code := schedules(bad.args...)
		require.Equal(t, bad.code, code, "%v: %s", bad.args, errOut)
		require.Empty(t, out, bad.args)
		require.Contains(t, errOut, bad.says, bad.args)
	}

	out, errOut, code = schedules("delete", "nightly")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "schedule nightly: deleted (the jobs it enqueued stay)\n", out)
	out, _, code = schedules("delete", "later", "--json")
	require.Equal(t, 0, code)
	require.JSONEq(t, `{"name":"later","deleted":true}`, out)
	out, _, code = schedules("--json")
	require.Equal(t, 0, code)
	var list api.SchedulesResponse
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	require.Len(t, list.Schedules, 1)
	require.True(t, list.Schedules[0].Module, "only the module's is left")
}

// TestJobsListsByDefaultAndASkipNeedsAReason: stile jobs alone lists, as
// stile jobs list does; stile reactions skip asks for the reason the API
// requires before it asks the API.
func TestJobsListsByDefaultAndASkipNeedsAReason(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	h := stiletest.New(t, stiletest.Config{App: testapp.App()})
	c := cli{bin, h.URL, h.Token()}
	ctx := context.Background()
	j, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo"})
	require.NoError(t, err)
	out, errOut, code := c.run(t, "jobs")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^ID\s+KIND\s+QUEUE\s+STATE`, out)
	require.Regexp(t, `(?m)^`+j.ID+`\s+test\.echo\s+default\s+available\s`, out)
	listed, _, _ := c.run(t, "jobs", "list")
	require.Equal(t, listed, out)
	out, _, code = c.run(t, "jobs", "--kind", "nothing.such")
	require.Equal(t, 0, code)
	require.NotContains(t, out, j.ID, "flags without a verb filter the list")
	_, errOut, code = c.run(t, "jobs", "list", j.ID)
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "stile jobs list takes flags only")

	// A skip needs a reason: the API keeps it and refuses a skip without.
	_, errOut, code = c.run(t, "reactions", "skip", testapp.RefundPolicy, "1")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--reason WHY")
	_, errOut, code = c.run(t, "reactions", "skip", "no-such-reaction", "1", "--reason", "poison")
	require.Equal(t, 4, code, errOut)
	require.Contains(t, errOut, `no reaction "no-such-reaction"`)

	// The docs' flags: --after and --types filter the log, --stream reads
	// one stream; together they are a usage error, not a silent drop.
	_, errOut, code = c.run(t, "events", "--stream", "cli", "--after", "3")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "--stream reads one stream")
	_, errOut, code = c.run(t, "events", "--after", "0", "--types", testapp.Noted)
	require.Equal(t, 0, code, errOut)

	// Search, and act on every job a search finds (the tenant runs it).
	for _, id := range []string{"42", "42", "7"} {
		_, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.echo", Args: json.RawMessage(`{"customer":{"id":` + id + `}}`)})
		require.NoError(t, err)
	}
	out, errOut, code = c.run(t, "jobs", "--where", "args.customer.id=42")
	require.Equal(t, 0, code, errOut)
	require.Equal(t, 2, strings.Count(out, "test.echo"), out)
	out, errOut, code = c.run(t, "jobs", "cancel", "--where", "args.customer.id=42", "--state", "available")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `operation \d+: cancel of .*: 2 found, 2 done, 0 skipped`, out)
	out, _, _ = c.run(t, "jobs", "--where", "args.customer.id=42", "--state", "cancelled")
	require.Equal(t, 2, strings.Count(out, "test.echo"), out)
	_, errOut, code = c.run(t, "jobs", "cancel", "--where", "colour=red")
	require.Equal(t, 3, code, errOut)
	require.Contains(t, errOut, "unknown query parameter")
	_, errOut, code = c.run(t, "jobs", "retry", "1", "--where", "state=dead")
	require.Equal(t, 2, code, errOut)

	// What is failing now, by kind and error.
	out, errOut, code = c.run(t, "failing")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nothing is failing")
	fj, err := h.Tenant("acme").Enqueue(ctx, api.EnqueueRequest{Kind: "test.fast", MaxAttempts: 1, Queue: "failing"})
	require.NoError(t, err)
	claimed, err := h.Tenant("acme").Claim(ctx, api.ClaimRequest{Worker: "w", Queues: []string{"failing"}})
	require.NoError(t, err)
	require.Len(t, claimed.Jobs, 1)
	_, err = h.Tenant("acme").Report(ctx, fj.ID, api.ReportRequest{Claim: api.Claim{Worker: "w", Attempt: 1, LeaseToken: claimed.Jobs[0].LeaseToken},
		Outcome: api.OutcomeFailed, Error: "provider timed out after 30 s"})
	require.NoError(t, err)
	out, errOut, code = c.run(t, "failing")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^test\.fast\s+dead\s+1\s.*\s`+fj.ID+`\s+provider timed out after # s$`, out)
	// Across tenants: what the tenant told the directory once its alarm
	// looked.
	h.Advance(api.FailingNoteDelay + time.Second)
	out, errOut, code = c.run(t, "failing", "--all")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `(?m)^job test\.fast \(dead\)\s+1\s+1\s.*provider timed out after # s\s+acme:1$`, out)
	require.Contains(t, out, "1 tenants have something failing")
	out, errOut, code = c.run(t, "failing", "--prefix", "globex")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "nothing is failing in any tenant")
	// Fixed in every tenant, through the directory.
	out, errOut, code = c.run(t, "jobs", "retry", "--all", "--where", "state=dead&kind=test.fast")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `operation \d+: retry of kind=test\.fast&state=dead in every tenant: 1 tenants, 1 found, 1 done, 0 skipped, 0 tenants refused`, out)
	_, errOut, code = c.run(t, "jobs", "retry", "--prefix", "zz", "--where", "state=dead")
	require.Equal(t, 4, code, errOut)
	require.Contains(t, errOut, `no tenant's name starts with "zz"`)
	_, errOut, code = c.run(t, "jobs", "--all")
	require.Equal(t, 2, code, errOut)

	// Pause and resume a reaction: the list says so, and a paused one's
	// deliveries are claimed by nobody.
	out, errOut, code = c.run(t, "reactions", "pause", testapp.AuditPolicy)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "reaction "+testapp.AuditPolicy+": paused")
	out, _, _ = c.run(t, "reactions")
	require.Regexp(t, `(?m)^`+testapp.AuditPolicy+`\s+\S+\s+paused\s`, out)
	st, err := h.Tenant("acme").Reactions(ctx)
	require.NoError(t, err)
	for _, r := range st.Reactions {
		require.Equal(t, r.Name == testapp.AuditPolicy, r.Paused, r.Name)
	}
	out, errOut, code = c.run(t, "reactions", "resume", testapp.AuditPolicy)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "running")
	_, errOut, code = c.run(t, "reactions", "pause")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = c.run(t, "reactions", "pause", "no-such-reaction")
	require.Equal(t, 4, code, errOut)

	// Replay a policy: what it handled is delivered again, and the command
	// follows the operation until it is done.
	_, err = h.Tenant("acme").Append(ctx, "cli", api.AppendRequest{Events: []api.NewEvent{{Type: testapp.Noted, Data: json.RawMessage(`{}`)}}})
	require.NoError(t, err)
	handled, err := h.Tenant("acme").ClaimReactions(ctx, api.ReactionClaimRequest{Worker: "w", Handlers: []string{testapp.AuditPolicy}, Limit: 10})
	require.NoError(t, err)
	require.NotEmpty(t, handled.Deliveries)
	for _, d := range handled.Deliveries {
		_, err := h.Tenant("acme").Settle(ctx, api.Settlement{Handler: d.Handler, Seq: d.Event.Seq, ClaimID: d.ClaimID, Outcome: api.OutcomeSucceeded})
		require.NoError(t, err)
	}
	first := handled.Deliveries[0].Event.Seq
	out, errOut, code = c.run(t, "reactions", "replay", testapp.AuditPolicy, "--from", strconv.FormatInt(first, 10))
	require.Equal(t, 0, code, errOut)
	n := strconv.Itoa(len(handled.Deliveries))
	require.Regexp(t, `operation \d+: done: `+n+` found, `+n+` delivered again, 0 still open`, out)
	again, err := h.Tenant("acme").ClaimReactions(ctx, api.ReactionClaimRequest{Worker: "w", Handlers: []string{testapp.AuditPolicy}, Limit: 10})
	require.NoError(t, err)
	require.Len(t, again.Deliveries, len(handled.Deliveries))
	require.Equal(t, first, again.Deliveries[0].Event.Seq)
	_, errOut, code = c.run(t, "reactions", "replay", testapp.AuditPolicy)
	require.Equal(t, 2, code, errOut)
	_, errOut, code = c.run(t, "reactions", "replay", "no-such-reaction", "--from", "1")
	require.Equal(t, 4, code, errOut)
}
