package fence_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/fence"
)

func TestRanAgainExplainsEachEarlierAttempt(t *testing.T) {
	require.Empty(t, fence.RanAgain(nil, true, nil), "a first attempt running")
	require.Empty(t, fence.RanAgain([]fence.AttemptEnd{{Attempt: 1, Outcome: "completed"}}, false, nil), "ran once")
	require.Equal(t,
		"ran 2 times: attempt 1 (w1) lost its lease, noticed by the alarm; the fence refused its report lease_expired; attempt 2 (w2) completed",
		fence.RanAgain([]fence.AttemptEnd{
			{Attempt: 1, Worker: "w1", Outcome: "lease_expired", NoticedBy: "alarm"},
			{Attempt: 2, Worker: "w2", Outcome: "completed", NoticedBy: "report"},
		}, false, []fence.RefusedReport{{Attempt: 1, Request: "report", Code: "lease_expired"}, {Attempt: 1, Request: "report", Code: "lease_expired"}}))
	require.Equal(t,
		"ran 3 times: attempt 1 (w1) failed: boom, and was retried; attempt 2 (w1) snoozed (or was released at a shutdown); attempt 3 is running",
		fence.RanAgain([]fence.AttemptEnd{
			{Attempt: 1, Worker: "w1", Outcome: "failed", Error: "boom\nstack…"},
			{Attempt: 2, Worker: "w1", Outcome: "snoozed"},
		}, true, nil))
}
