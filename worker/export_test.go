package worker

import (
	"slices"
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

// Wait returns the next value signalled (or kept by Await), failing the
// test if none comes.
func (s *testSignal[T]) Wait(tb testing.TB) T {
	tb.Helper()
	return s.Await(tb, func(T) bool { return true })
}

// Await returns the first value signalled that match accepts, whatever
// order the values come in: those read while waiting are kept, in order,
// for the next Wait or Await.
func (s *testSignal[T]) Await(tb testing.TB, match func(T) bool) T {
	tb.Helper()
	if i := slices.IndexFunc(s.held, match); i >= 0 {
		v := s.held[i]
		s.held = slices.Delete(s.held, i, i+1)
		return v
	}
	for {
		select {
		case v := <-s.ch:
			if match(v) {
				return v
			}
			s.held = append(s.held, v)
		case <-time.After(testSignalWait):
			var zero T
			tb.Fatalf("no %T signal as awaited within %s (%d others came first)", zero, testSignalWait, len(s.held))
			return zero
		}
	}
}
