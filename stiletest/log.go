package stiletest

import (
	"strings"
	"sync"
	"testing"
)

// logBuffer keeps the last max log lines of a harness, to show in the
// log of a test that failed. The host logs from its own goroutines, also
// after the test returned, so the lines are kept rather than sent to
// testing.TB.Log as they come.
type logBuffer struct {
	mu      sync.Mutex
	max     int
	lines   []string
	dropped int
}

// Write implements io.Writer; slog's text handler writes one line a call.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) == b.max {
		copy(b.lines, b.lines[1:])
		b.lines = b.lines[:len(b.lines)-1]
		b.dropped++
	}
	b.lines = append(b.lines, strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func (b *logBuffer) dump(tb testing.TB) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) == 0 {
		return
	}
	head := "stile log:"
	if b.dropped > 0 {
		head = "stile log (the last lines; earlier ones dropped):"
	}
	tb.Logf("%s\n%s", head, strings.Join(b.lines, "\n"))
}
