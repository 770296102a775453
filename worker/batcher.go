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
// answer (a job keeps its handler slot until then); a batch that fails in
// transit is sent again for the items whose again says so (their lease
// lasts), with a growing pause.
type batcher[T, R any] struct {
	max int
	// send makes one request for items, and returns each item's result
	// and error (every error the same one when the request failed).
	send func(items []T) ([]R, []error)
	// retrying is told before a batch is sent again: how many, and why.
	retrying func(n int, in time.Duration, err error)

	mu       sync.Mutex
	inflight bool
	queue    []*pendingItem[T, R]
}

type pendingItem[T, R any] struct {
	item T
	// again says whether to send the item again after err (and logs).
	again func(err error) bool
	res   R
	err   error
	done  chan struct{}
}

func newBatcher[T, R any](max int, send func([]T) ([]R, []error), retrying func(int, time.Duration, error)) *batcher[T, R] {
	return &batcher[T, R]{max: max, send: send, retrying: retrying}
}

// do sends item and waits for its answer.
func (b *batcher[T, R]) do(item T, again func(error) bool) (R, error) {
	p := &pendingItem[T, R]{item: item, again: again, done: make(chan struct{})}
	b.mu.Lock()
	if b.inflight {
		b.queue = append(b.queue, p)
		b.mu.Unlock()
		<-p.done
		return p.res, p.err
	}
	b.inflight = true
	b.mu.Unlock()
	b.deliver([]*pendingItem[T, R]{p})
	b.mu.Lock()
	if len(b.queue) > 0 {
		go b.flush() // what queued meanwhile goes next
	} else {
		b.inflight = false
	}
	b.mu.Unlock()
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
		b.deliver(batch)
	}
}

// deliver sends one batch, again while items fail in transit and may be
// sent again, and answers each.
func (b *batcher[T, R]) deliver(batch []*pendingItem[T, R]) {
	delay := 100 * time.Millisecond
	for len(batch) > 0 {
		items := make([]T, len(batch))
		for i, p := range batch {
			items[i] = p.item
		}
		res, errs := b.send(items)
		var again []*pendingItem[T, R]
		var why error
		for i, p := range batch {
			if i < len(res) {
				p.res = res[i]
			}
			if i < len(errs) && errs[i] != nil && p.again(errs[i]) {
				again, why = append(again, p), errs[i]
				continue
			}
			if i < len(errs) {
				p.err = errs[i]
			}
			close(p.done)
		}
		if len(again) > 0 {
			b.retrying(len(again), delay, why)
			time.Sleep(delay)
			delay = min(delay*2, 5*time.Second)
		}
		batch = again
	}
}
