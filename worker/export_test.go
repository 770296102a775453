package worker

import (
	"testing"
	"time"
)

// TestSignals are a worker's test signals (testsignals.go), for the
// package's external tests.
type TestSignals = testSignals

// AttemptEnd is what TestSignals.AttemptEnded carries.
type AttemptEnd = attemptEnd

// TestSignals turns w's test signals on: call it before Run.
func (w *Worker) TestSignals() *TestSignals {
	w.signals.init()
	return &w.signals
}

// testSignalWait bounds a wait for a signal: a worker that never gets
// there fails the test instead of hanging it.
const testSignalWait = 20 * time.Second

// Wait returns the next value signalled, failing the test if none comes.
func (s *testSignal[T]) Wait(tb testing.TB) T {
	tb.Helper()
	select {
	case v := <-s.ch:
		return v
	case <-time.After(testSignalWait):
		var zero T
		tb.Fatalf("no %T signal within %s", zero, testSignalWait)
		return zero
	}
}
