package worker

import (
	"sync"
	"time"
)

// A batcher sends one tenant's reports (or settlements) adaptively: an
// item made while none of the tenant's is in flight is sent at once, alone,
// from the caller's goroutine (no latency added at light load); items made
// while one is in flight wait for it and go together, up to max, in one
// request, where the API fences each on its own. A busy worker so sends a
// request per batch, not per job. The caller waits for its own item's
// answer (a job keeps its handler slot until then). An item that fails in
// transit, and whose again says it may be sent again (its lease lasts),
// waits out a growing pause off the line and then joins the queue again:
// one failing item never holds back the tenant's others.
type batcher[T, R any] struct {
	max int
	// send makes one request for items, and returns each item's result
	// and error (every error the same one when the request failed).
	send func(items []T) ([]R, []error)
	// retrying is told before items are sent again: how many, and why.
	retrying func(n int, in time.Duration, err error)

	// queued is signalled when an item waits behind one in flight
	// (testSignals).
	queued *testSignal[struct{}]

	mu       sync.Mutex
	inflight bool
	queue    []*pendingItem[T, R]
}

type pendingItem[T, R any] struct {
	item T
	// again says whether to send the item again after err (and logs).
	again func(err error) bool
	delay time.Duration // the pause before it is sent again
	res   R
	err   error
	done  chan struct{}
}

func newBatcher[T, R any](max int, send func([]T) ([]R, []error), retrying func(int, time.Duration, error)) *batcher[T, R] {
	return &batcher[T, R]{max: max, send: send, retrying: retrying}
}

func newPending[T, R any](item T, again func(error) bool) *pendingItem[T, R] {
	return &pendingItem[T, R]{item: item, again: again, delay: 100 * time.Millisecond, done: make(chan struct{})}
}

// do sends item, with others when some are in flight, and waits for its
// answer.
func (b *batcher[T, R]) do(item T, again func(error) bool) (R, error) {
	p := newPending[T, R](item, again)
	b.mu.Lock()
	if b.inflight {
		b.queue = append(b.queue, p)
		b.mu.Unlock()
		b.queued.signal(struct{}{})
		<-p.done
		return p.res, p.err
	}
	b.inflight = true
	b.mu.Unlock()
	// Items made meanwhile by goroutines ready to run go with this one
	// (yieldToReady: on one thread, the rest of a claim's handlers).
	first := []*pendingItem[T, R]{p}
	if yieldToReady() {
		b.mu.Lock()
		first = append(first, b.queue[:min(len(b.queue), b.max-1)]...)
		b.queue = append(b.queue[:0], b.queue[len(first)-1:]...)
		b.mu.Unlock()
	}
	b.requeueLater(b.deliver(first))
	b.mu.Lock()
	if len(b.queue) > 0 {
		go b.flush() // what queued meanwhile goes next
	} else {
		b.inflight = false
	}
	b.mu.Unlock()
	<-p.done
	return p.res, p.err
}

// alone sends item in requests of its own, never gathered with others,
// pausing between attempts in the caller's goroutine
// (Config.SingleReports).
func (b *batcher[T, R]) alone(item T, again func(error) bool) (R, error) {
	p := newPending[T, R](item, again)
	for retry := b.deliver([]*pendingItem[T, R]{p}); len(retry) > 0; retry = b.deliver(retry) {
		time.Sleep(p.delay)
		p.delay = min(2*p.delay, 5*time.Second)
	}
	return p.res, p.err
}

// flush sends what is queued, batch after batch, until nothing is.
func (b *batcher[T, R]) flush() {
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.inflight = false
			b.mu.Unlock()
			return
		}
		n := min(len(b.queue), b.max)
		batch := append([]*pendingItem[T, R](nil), b.queue[:n]...)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()
		b.requeueLater(b.deliver(batch))
	}
}

// deliver sends one batch once and answers each item, except those to be
// sent again, which it returns.
func (b *batcher[T, R]) deliver(batch []*pendingItem[T, R]) (retry []*pendingItem[T, R]) {
	items := make([]T, len(batch))
	for i, p := range batch {
		items[i] = p.item
	}
	res, errs := b.send(items)
	var why error
	for i, p := range batch {
		if i < len(res) {
			p.res = res[i]
		}
		if i < len(errs) && errs[i] != nil && p.again(errs[i]) {
			retry, why = append(retry, p), errs[i]
			continue
		}
		if i < len(errs) {
			p.err = errs[i]
		}
		close(p.done)
	}
	if len(retry) > 0 {
		b.retrying(len(retry), retry[0].delay, why)
	}
	return retry
}

// requeueLater puts items back in the queue once their pause is over,
// without holding the line meanwhile.
func (b *batcher[T, R]) requeueLater(items []*pendingItem[T, R]) {
	for _, p := range items {
		time.AfterFunc(p.delay, func() {
			p.delay = min(2*p.delay, 5*time.Second)
			b.mu.Lock()
			b.queue = append(b.queue, p)
			start := !b.inflight
			b.inflight = true
			b.mu.Unlock()
			if start {
				b.flush()
			}
		})
	}
}
