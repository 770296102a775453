package worker

// testSignals are points of a worker's work that its tests wait on
// instead of sleeping: a test turns them on (export_test.go) before Run,
// and waits for the point it needs, then moves the manual clock or checks
// what follows. Off (nil channels) in production, where each signal is a
// nil check.
type testSignals struct {
	// HeartbeatWaiting: a job's heartbeat loop waits on the clock for its
	// next heartbeat (or the lease's end). The job's id.
	HeartbeatWaiting testSignal[string]
	// AttemptEnded: a job's attempt or a reaction's delivery ended, its
	// report or settlement answered and its line logged: nothing more is
	// done for it.
	AttemptEnded testSignal[attemptEnd]
	// ReportQueued and SettlementQueued: a report (settlement) waits
	// behind one of its tenant's in flight, to go in the next batch.
	ReportQueued     testSignal[struct{}]
	SettlementQueued testSignal[struct{}]
	// Stopped: Run's context ended and its loops stopped claiming; it waits
	// for the handlers still running, whose number this is.
	Stopped testSignal[int64]
}

// attemptEnd names the attempt that ended: a job's (JobID) or a
// delivery's (Reaction, Seq), with its outcome.
type attemptEnd struct {
	JobID    string
	Reaction string
	Seq      int64
	Attempt  int64
	Outcome  string
}

// testSignalBuffer is how many signals a test may leave unread.
const testSignalBuffer = 1024

// testSignal is one point of testSignals.
type testSignal[T any] struct {
	ch   chan T
	held []T // read by a test while it waited for another value (export_test.go)
}

func (s *testSignal[T]) init() { s.ch = make(chan T, testSignalBuffer) }

// signal tells a test waiting on s; a no-op unless a test turned s on.
func (s *testSignal[T]) signal(v T) {
	if s == nil || s.ch == nil {
		return
	}
	select {
	case s.ch <- v:
	default:
		// A signal dropped would leave a test waiting for nothing.
		panic("worker: a test signal's buffer is full: the test turned signals on but does not read them")
	}
}

func (s *testSignals) init() {
	s.HeartbeatWaiting.init()
	s.AttemptEnded.init()
	s.ReportQueued.init()
	s.SettlementQueued.init()
	s.Stopped.init()
}
