package main_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/host/workerd"
)

// TestBenchRunsEveryPart runs `stile bench` with tiny counts: every part
// must still run to its end (nothing is timed or compared here; the
// figures are the bench's to print). It broke silently twice: a read of a
// tenant not yet created, and a worker left with an old secret.
func TestBenchRunsEveryPart(t *testing.T) {
	t.Parallel()
	bin := stile(t)
	parts := []string{"jobs", "drain", "tenants", "depth", "events", "projections", "latency", "pushed", "rates"}
	if _, err := workerd.EnsureInstalled(); err == nil {
		parts = append(parts, "workerd", "rows", "commands", "edge")
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: %v", err)
	} else {
		t.Logf("the workerd parts are skipped: %v", err)
	}
	cmd := exec.Command(bin, "bench", "--only", strings.Join(parts, ","), "--jobs", "50", "--batch", "10",
		"--latency-jobs", "10", "--latency-rate", "200", "--depth", "2000", "--events", "200", "--rebuild-events", "2000",
		"--apply-events", "200", "--drain-jobs", "50", "--drain-runs", "1", "--drain-concurrency", "10", "--tenants", "10",
		"--tenant-requests", "20", "--edge-backlog", "50", "--edge-runs", "1", "--edge-latency-jobs", "10", "--edge-latency-rate", "200",
		"--pushed-jobs", "10", "--pushed-kept", "100", "--pushed-rounds", "1", "--pushed-behind", "10",
		"--rows-ops", "5", "--rows-history", "5", "--commands", "3", "--command-history", "20",
		"--rate-keys", "2", "--rate-jobs", "10", "--rate-limit", "5", "--rate-period", "200ms", "--rate-unlimited", "20", "--rate-runs", "1")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, header := range []string{"full job cycle", "drain:", "tenants:", "claim latency", "event log and reactions",
		"projections", "latency enqueue → completed", "pushed work", "rate limits:"} {
		require.Contains(t, string(out), header, "the bench printed its part")
	}
	if len(parts) > 9 {
		require.Contains(t, string(out), "workerd (Miniflare 4")
		require.Contains(t, string(out), "edge executor")
		require.Contains(t, string(out), "rows per operation, workerd")
		require.Contains(t, string(out), "commands on an aggregate as its history grows")
	}
}
