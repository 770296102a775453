package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Every executor runs handlers through run and runReaction, so the line
// that says how an attempt ended is logged there, once: a failed, panicked
// or timed-out attempt, and a report or settlement the tenant refused or
// that never arrived, at Warn; a release at Info; the rest at Debug. An
// operator reading an executor's log (`wrangler tail` at the edge) sees one
// line per attempt that went wrong, with its tenant, kind or reaction, job
// or event, attempt and error.

// panicError is a handler's panic as the failure it reports: the error
// stored with the attempt carries the stack.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("handler panicked: %v\n%s", p.value, p.stack) }

// outcomeLine is the line an attempt's end is logged with.
type outcomeLine struct {
	level slog.Level
	msg   string
	attrs []any
}

func (l outcomeLine) log(log *slog.Logger) { log.Log(context.Background(), l.level, l.msg, l.attrs...) }

// jobLine decides the line of a job's attempt: report is what was sent
// for it, herr what the handler returned, cause why its context ended (if
// it did), and sendErr the error of a report that was refused or never
// arrived.
func jobLine(report api.ReportRequest, herr, cause, sendErr error) outcomeLine {
	l := outcomeLine{attrs: []any{"outcome", report.Outcome}}
	l.attrs = append(l.attrs, errorAttrs(report.Error, herr)...)
	switch {
	case sendErr != nil:
		l.level, l.msg = slog.LevelWarn, sentLine("job", sendErr)
		l.attrs = append(l.attrs, "report_err", sendErr)
		if cause != nil {
			l.attrs = append(l.attrs, "cause", cause)
		}
	case report.Outcome == api.OutcomeFailed:
		l.level, l.msg = slog.LevelWarn, failedLine("job", herr, cause)
		if report.Final {
			l.attrs = append(l.attrs, "final", true)
		}
	case report.Outcome == api.OutcomeSnoozed && errors.Is(cause, ErrShutdown) && herr != nil:
		l.level, l.msg = slog.LevelInfo, "job released: the worker is stopping"
	case report.Outcome == api.OutcomeCancelled:
		l.level, l.msg = slog.LevelInfo, "job cancelled"
	default:
		l.level, l.msg = slog.LevelDebug, "job "+report.Outcome
	}
	return l
}

// reactionLine decides the line of a reaction's delivery: s is the
// settlement that was sent, herr what the handler returned, cause why its
// context ended, res the inbox's answer and sendErr the error of a
// settlement that was refused or never arrived.
func reactionLine(s api.Settlement, herr, cause error, res api.SettleResult, sendErr error) outcomeLine {
	l := outcomeLine{attrs: []any{"outcome", s.Outcome}}
	l.attrs = append(l.attrs, errorAttrs(s.Error, herr)...)
	if sendErr == nil && res.Error != nil {
		sendErr = res.Error
	}
	switch {
	case sendErr != nil:
		l.level, l.msg = slog.LevelWarn, sentLine("reaction", sendErr)
		l.attrs = append(l.attrs, "settle_err", sendErr)
	case s.Outcome == api.OutcomeFailed:
		l.level, l.msg = slog.LevelWarn, failedLine("reaction", herr, cause)
	case s.Outcome == api.OutcomeDelayed && errors.Is(cause, ErrShutdown) && herr != nil:
		l.level, l.msg = slog.LevelInfo, "reaction released: the worker is stopping"
	default:
		l.level, l.msg = slog.LevelDebug, "reaction "+s.Outcome
	}
	return l
}

// failedLine is the message of a failed attempt: why it failed, when that
// was a panic or the time limit.
func failedLine(what string, herr, cause error) string {
	var p *panicError
	switch {
	case errors.As(herr, &p):
		return what + " handler panicked"
	case errors.Is(cause, ErrTimeout):
		return what + " timed out"
	default:
		return what + " failed"
	}
}

// sentLine is the message of a report or settlement that did not land:
// refused by the fence (stale: the attempt is someone else's now),
// refused for what it held, or given up when its lease ran out.
func sentLine(what string, err error) string {
	switch {
	case errors.Is(err, api.ErrStale):
		return what + " attempt refused by the fence"
	case gaveUp(err):
		return what + " outcome not delivered before the lease ran out; it will run again"
	default:
		return what + " outcome refused"
	}
}

// errorAttrs are the error attributes of a line: the recorded error, but
// for a panic only its first line, and the stack apart (the attempt's
// stored error keeps both).
func errorAttrs(recorded string, herr error) []any {
	if recorded == "" {
		return nil
	}
	var p *panicError
	if errors.As(herr, &p) {
		first, _, _ := strings.Cut(recorded, "\n")
		return []any{"err", first, "stack", string(p.stack)}
	}
	return []any{"err", recorded}
}

// gaveUp says a report or settlement was given up while it might still
// have been sent: its lease had run out.
func gaveUp(err error) bool { return client.Retryable(err) && !errors.Is(err, errNoAnswer) }
