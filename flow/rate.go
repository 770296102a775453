package flow

import (
	"errors"
	"strconv"
	"strings"
)

// Rate is a rate limit: at most Limit starts in any window of PeriodMs
// milliseconds.
type Rate struct {
	Limit    int64
	PeriodMs int64
}

// Bounds of a rate limit, which the API checks.
const (
	MaxLimit    = 1_000_000
	MinPeriodMs = 1
	MaxPeriodMs = 24 * 60 * 60 * 1000 // a day
)

// Problem says what is wrong with r ("": nothing), in a line a user can
// act on.
func (r Rate) Problem() string {
	switch {
	case r.Limit < 1 || r.Limit > MaxLimit:
		return "limit " + strconv.FormatInt(r.Limit, 10) + " is outside 1-" + strconv.Itoa(MaxLimit)
	case r.PeriodMs < MinPeriodMs || r.PeriodMs > MaxPeriodMs:
		return "period_ms " + strconv.FormatInt(r.PeriodMs, 10) + " is outside " + strconv.Itoa(MinPeriodMs) + "-" + strconv.Itoa(MaxPeriodMs) + " (a day)"
	}
	return ""
}

// Starts is a number of starts at one time (Unix ms).
type Starts struct {
	At, N int64
}

// Window is a key's recent starts, oldest first, at distinct times.
type Window []Starts

// MaxEntries bounds a window's entries, so its row stays small whatever
// the limit: 1,000 entries of a one-second period keep every millisecond.
const MaxEntries = 1000

// trim drops the starts that left the window ending at now: those at or
// before now - period.
func (w Window) trim(now, period int64) Window {
	i := 0
	for i < len(w) && w[i].At <= now-period {
		i++
	}
	return w[i:]
}

// count is the starts in w.
func (w Window) count() int64 {
	var n int64
	for _, s := range w {
		n += s.N
	}
	return n
}

// InWindow is how many starts of w fall in r's window that ends at now
// (more than r.Limit when the limit was lowered since, or a stale start
// was counted).
func InWindow(w Window, r Rate, now int64) int64 {
	return w.trim(now, r.PeriodMs).count()
}

// Allowance is how many starts r allows at now after the starts of w.
func Allowance(w Window, r Rate, now int64) int64 {
	return max(0, r.Limit-w.trim(now, r.PeriodMs).count())
}

// Next is the earliest time, not before now, at which r allows a start
// after the starts of w: now if it allows one already, else the time the
// start that must leave the window for a new one to fit leaves it.
func Next(w Window, r Rate, now int64) int64 {
	w = w.trim(now, r.PeriodMs)
	over := w.count() - r.Limit + 1 // starts that must leave the window
	if over <= 0 {
		return now
	}
	var gone int64
	for _, s := range w {
		if gone += s.N; gone >= over {
			return s.At + r.PeriodMs
		}
	}
	return now // not reached: count >= over
}

// Take records n starts at now in w (trimmed to r's period), the
// entries kept within MaxEntries (give or take the slots at the window's
// two ends) by counting a start at the end of its slot of r.PeriodMs /
// MaxEntries milliseconds, rounded up: later than it happened, so never one
// start more than r allows.
func Take(w Window, r Rate, now, n int64) Window {
	w = w.trim(now, r.PeriodMs)
	if n <= 0 {
		return w
	}
	at := now
	if slot := (r.PeriodMs + MaxEntries - 1) / MaxEntries; slot > 1 {
		at = (now + slot - 1) / slot * slot
	}
	if k := len(w); k > 0 && w[k-1].At >= at {
		// The slot (or a later one, recorded before a clock step back)
		// is the newest entry: count the starts there.
		w[k-1].N += n
		return w
	}
	return append(w, Starts{At: at, N: n})
}

// ErrWindow is the error of a window that does not decode.
var ErrWindow = errors.New("flow: a rate window is not a list of time:count pairs, oldest first")

// Encode writes w as text: "at:n" pairs separated by commas, oldest first.
func (w Window) Encode() string {
	if len(w) == 0 {
		return ""
	}
	// A Unix ms time is 13 digits, a count a few: one allocation for the
	// buffer, one for the string (the claim encodes a key's window at each
	// start, in the tenant's module, where an allocation is dear).
	b := make([]byte, 0, len(w)*18)
	for i, s := range w {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, s.At, 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, s.N, 10)
	}
	return string(b)
}

// Decode reads a window Encode wrote. It reads the text in one pass, byte
// by byte: every claim decodes the window of each key with room, in the
// tenant's module, and splitting the text and parsing each number took
// twice as long there.
func Decode(s string) (Window, error) {
	if s == "" {
		return nil, nil
	}
	n := strings.Count(s, ",") + 1
	if n > 2*MaxEntries {
		return nil, ErrWindow
	}
	w := make(Window, 0, n)
	for i := 0; ; i++ {
		at, j, ok := parseInt(s, i)
		if !ok || j == len(s) || s[j] != ':' {
			return nil, ErrWindow
		}
		c, k, ok := parseInt(s, j+1)
		if !ok || c < 1 || len(w) > 0 && at <= w[len(w)-1].At {
			return nil, ErrWindow
		}
		w = append(w, Starts{At: at, N: c})
		if k == len(s) {
			return w, nil
		}
		if s[k] != ',' {
			return nil, ErrWindow
		}
		i = k
	}
}

// parseInt reads a decimal int64 (a sign allowed, as strconv.ParseInt
// allows) from s[i:], up to the first byte that is not a digit: the value
// and the index after it; false for no digits or an overflow.
func parseInt(s string, i int) (v int64, end int, ok bool) {
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	start := i
	var u uint64
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if u > (1<<63)/10 {
			return 0, i, false
		}
		u = u*10 + uint64(s[i]-'0')
		if u > 1<<63 {
			return 0, i, false
		}
	}
	if i == start || !neg && u > 1<<63-1 {
		return 0, i, false
	}
	if neg {
		return -int64(u), i, true
	}
	return int64(u), i, true
}
