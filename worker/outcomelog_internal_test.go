package worker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

func attrs(l outcomeLine) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(l.attrs); i += 2 {
		m[l.attrs[i].(string)] = l.attrs[i+1]
	}
	return m
}

func TestTheLineOfAJobAttempt(t *testing.T) {
	t.Parallel()
	stale := api.Refuse(api.CodeLeaseExpired, "the lease of attempt 1 of job 7 expired before the report")
	lost := errors.New("connection reset")
	failed := api.ReportRequest{Outcome: api.OutcomeFailed, Error: "the provider said no"}
	for _, c := range []struct {
		name              string
		report            api.ReportRequest
		herr, cause, sent error
		level             slog.Level
		msg               string
		attrs             map[string]any
	}{
		{"completed", api.ReportRequest{Outcome: api.OutcomeCompleted}, nil, nil, nil, slog.LevelDebug, "job completed", nil},
		{"failed", failed, errors.New("the provider said no"), nil, nil, slog.LevelWarn, "job failed",
			map[string]any{"err": "the provider said no"}},
		{"final", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "bad args", Final: true}, Final(errors.New("bad args")), nil, nil,
			slog.LevelWarn, "job failed", map[string]any{"final": true}},
		{"timed out", api.ReportRequest{Outcome: api.OutcomeFailed, Error: "timed out after 5 ms: context deadline exceeded"},
			context.DeadlineExceeded, ErrTimeout, nil, slog.LevelWarn, "job timed out", nil},
		{"refused by the fence", failed, errors.New("the provider said no"), nil, stale, slog.LevelWarn, "job attempt refused by the fence",
			map[string]any{"err": "the provider said no", "report_err": stale}},
		{"lease lost, then refused", api.ReportRequest{Outcome: api.OutcomeCompleted}, nil, ErrLeaseLost, stale, slog.LevelWarn,
			"job attempt refused by the fence", map[string]any{"cause": ErrLeaseLost}},
		{"never delivered", failed, errors.New("the provider said no"), nil, lost, slog.LevelWarn,
			"job outcome not delivered before the lease ran out; it will run again", map[string]any{"report_err": lost}},
		{"refused for its content", api.ReportRequest{Outcome: api.OutcomeCompleted}, nil, nil, api.Refuse(api.CodeInvalidRequest, "output too large"),
			slog.LevelWarn, "job outcome refused", nil},
		{"released at the budget's end", api.ReportRequest{Outcome: api.OutcomeSnoozed}, context.Canceled, ErrShutdown, nil, slog.LevelInfo,
			"job released: the worker is stopping", nil},
		{"snoozed", api.ReportRequest{Outcome: api.OutcomeSnoozed, SnoozeMs: 10}, Snooze(10 * time.Millisecond), nil, nil, slog.LevelDebug, "job snoozed", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := jobLine(c.report, c.herr, c.cause, c.sent)
			require.Equal(t, c.level, l.level)
			require.Equal(t, c.msg, l.msg)
			got := attrs(l)
			require.Equal(t, c.report.Outcome, got["outcome"])
			for k, v := range c.attrs {
				require.Equal(t, v, got[k], k)
			}
		})
	}
}

func TestTheLineOfADelivery(t *testing.T) {
	t.Parallel()
	p := &panicError{value: "nil map", stack: []byte("goroutine 7 [running]:\nmain.handler()")}
	taken := api.Refuse(api.CodeClaimTakenOver, "another claim holds the delivery")
	for _, c := range []struct {
		name        string
		s           api.Settlement
		herr, cause error
		res         api.SettleResult
		sent        error
		level       slog.Level
		msg         string
		attrs       map[string]any
	}{
		{"succeeded", api.Settlement{Outcome: api.OutcomeSucceeded}, nil, nil, api.SettleResult{}, nil, slog.LevelDebug, "reaction succeeded", nil},
		{"panicked", api.Settlement{Outcome: api.OutcomeFailed, Error: p.Error()}, p, nil, api.SettleResult{}, nil, slog.LevelWarn,
			"reaction handler panicked", map[string]any{"err": "handler panicked: nil map", "stack": string(p.stack)}},
		{"timed out", api.Settlement{Outcome: api.OutcomeFailed, Error: "timed out after 5 ms: context deadline exceeded"},
			context.DeadlineExceeded, ErrTimeout, api.SettleResult{}, nil, slog.LevelWarn, "reaction timed out", nil},
		{"refused by the inbox", api.Settlement{Outcome: api.OutcomeSucceeded}, nil, nil, api.SettleResult{Error: taken}, nil, slog.LevelWarn,
			"reaction attempt refused by the fence", map[string]any{"settle_err": error(taken)}},
		{"refused in the request", api.Settlement{Outcome: api.OutcomeFailed, Error: "x"}, errors.New("x"), nil, api.SettleResult{}, taken,
			slog.LevelWarn, "reaction attempt refused by the fence", nil},
		{"released", api.Settlement{Outcome: api.OutcomeDelayed}, context.Canceled, ErrShutdown, api.SettleResult{}, nil, slog.LevelInfo,
			"reaction released: the worker is stopping", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := reactionLine(c.s, c.herr, c.cause, c.res, c.sent)
			require.Equal(t, c.level, l.level)
			require.Equal(t, c.msg, l.msg)
			got := attrs(l)
			for k, v := range c.attrs {
				require.Equal(t, v, got[k], k)
			}
		})
	}
}

func TestAHandlerIsCutBeforeTheTenantsTimeLimit(t *testing.T) {
	t.Parallel()
	require.Equal(t, 100*time.Millisecond, reportTime(1000), "a tenth of a short limit")
	require.Equal(t, time.Second, reportTime(30*60*1000), "a second of a long one")
}
