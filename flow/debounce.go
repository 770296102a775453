package flow

import "strconv"

// What a debounced job keeps of the enqueues it collects.
const (
	KeepLast  = "last"  // the newest args (the default)
	KeepFirst = "first" // the first args
	KeepAll   = "all"   // every args, in order (the handler gets them all)
)

// MaxWindowMs bounds a debounce's or a throttle's window, and a
// debounce's max wait: a day.
const MaxWindowMs = 24 * 60 * 60 * 1000

// Debounce is an enqueue's debounce: enqueues of Key within WindowMs of
// the last collapse into one job, ready at the window's end but never
// later than MaxWaitMs (0: no bound) after the first.
type Debounce struct {
	Key       string
	WindowMs  int64
	MaxWaitMs int64
	Keep      string
}

// Problem says what is wrong with d ("": nothing), in a line a user can
// act on; its key is checked by the caller.
func (d Debounce) Problem() string {
	switch {
	case d.WindowMs < 1 || d.WindowMs > MaxWindowMs:
		return "debounce window_ms " + strconv.FormatInt(d.WindowMs, 10) + " is outside 1-" + strconv.Itoa(MaxWindowMs) + " (a day)"
	case d.MaxWaitMs != 0 && (d.MaxWaitMs < d.WindowMs || d.MaxWaitMs > MaxWindowMs):
		return "debounce max_wait_ms " + strconv.FormatInt(d.MaxWaitMs, 10) + " must be 0 (no bound) or within window_ms-" + strconv.Itoa(MaxWindowMs)
	case d.Keep != KeepLast && d.Keep != KeepFirst && d.Keep != KeepAll:
		return "debounce keep " + strconv.Quote(d.Keep) + " is not last, first or all"
	}
	return ""
}

// Open is when the first enqueue of a key at now makes its job ready, and
// the latest any later enqueue may move that to (0: no bound).
func (d Debounce) Open(now int64) (runAt, until int64) {
	if d.MaxWaitMs > 0 {
		until = now + d.MaxWaitMs
	}
	return now + d.WindowMs, until
}

// Collapse is when a job collecting d's key, ready at runAt and bound by
// until, is ready after one more enqueue at now: the end of a new window,
// not past until, never earlier than it was.
func (d Debounce) Collapse(runAt, until, now int64) int64 {
	next := now + d.WindowMs
	if until != 0 {
		next = min(next, until)
	}
	return max(next, runAt)
}
