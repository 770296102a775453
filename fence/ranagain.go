package fence

import (
	"strconv"
	"strings"
)

// AttemptEnd is how one attempt of a job ended, as RanAgain reads it.
type AttemptEnd struct {
	Attempt   int64
	Worker    string
	Outcome   string // completed, failed, snoozed, cancelled, lease_expired
	Error     string
	NoticedBy string // report, alarm, request
}

// RefusedReport is a heartbeat or report the fence refused, as RanAgain
// reads it.
type RefusedReport struct {
	Attempt int64
	Request string // heartbeat or report
	Code    string
}

// RanAgain says in one line why a job's handler ran more than once: how
// each attempt before the last ended, and what the fence refused of it.
// It is "" for a job that ran at most once. running says an attempt after
// the ended ones is in progress.
func RanAgain(ended []AttemptEnd, running bool, refused []RefusedReport) string {
	runs := len(ended)
	if running {
		runs++
	}
	if runs < 2 {
		return ""
	}
	var b strings.Builder
	b.WriteString("ran ")
	b.WriteString(strconv.Itoa(runs))
	b.WriteString(" times: ")
	for i, a := range ended {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("attempt ")
		b.WriteString(strconv.FormatInt(a.Attempt, 10))
		if a.Worker != "" {
			b.WriteString(" (" + a.Worker + ")")
		}
		switch a.Outcome {
		case "lease_expired":
			b.WriteString(" lost its lease, noticed by ")
			if a.NoticedBy == "alarm" {
				b.WriteString("the alarm")
			} else {
				b.WriteString("a request")
			}
		case "failed":
			b.WriteString(" failed")
			if a.Error != "" {
				b.WriteString(": " + firstLine(a.Error, 80))
			}
			if i < len(ended)-1 || running {
				b.WriteString(", and was retried")
			}
		case "snoozed":
			b.WriteString(" snoozed (or was released at a shutdown)")
		default:
			b.WriteString(" " + a.Outcome)
		}
		var codes []string
		for _, r := range refused {
			if r.Attempt == a.Attempt && !containsString(codes, r.Request+" "+r.Code) {
				codes = append(codes, r.Request+" "+r.Code)
			}
		}
		if len(codes) > 0 {
			b.WriteString("; the fence refused its ")
			b.WriteString(strings.Join(codes, ", "))
		}
	}
	if running {
		b.WriteString("; attempt ")
		b.WriteString(strconv.Itoa(runs))
		b.WriteString(" is running")
	}
	return b.String()
}

func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
