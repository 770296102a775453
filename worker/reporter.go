package worker

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Reports are batched per tenant, adaptively: a report made while none of
// the tenant's is in flight is sent at once, alone (no latency added at
// light load); reports made while one is in flight wait for it and go
// together, up to maxReportBatch, in one request (POST /reports), where
// each is fenced on its own. A busy worker so sends a request per batch,
// not per job. The job keeps its handler slot until its report is
// answered; a batch that fails in transit is sent again, for the reports
// whose lease lasts.

// maxReportBatch bounds the reports of one request.
const maxReportBatch = 100

type reporter struct {
	w        *Worker
	ten      *client.Tenant
	mu       sync.Mutex
	inflight bool
	queue    []*pendingReport
}

type pendingReport struct {
	ctx   context.Context
	id    string
	r     api.ReportRequest
	lease *leaseClock
	log   *slog.Logger
	done  chan error
}

// reporter returns the tenant's reporter.
func (w *Worker) reporter(ten *client.Tenant) *reporter {
	w.mu.Lock()
	defer w.mu.Unlock()
	rp := w.reporters[ten.Name()]
	if rp == nil {
		rp = &reporter{w: w, ten: ten}
		w.reporters[ten.Name()] = rp
	}
	return rp
}

// send reports and waits for the answer: nil once recorded (or a
// duplicate), else the refusal or the last failure.
func (rp *reporter) send(ctx context.Context, id string, r api.ReportRequest, lease *leaseClock, log *slog.Logger) error {
	p := &pendingReport{ctx: ctx, id: id, r: r, lease: lease, log: log, done: make(chan error, 1)}
	rp.mu.Lock()
	if rp.inflight {
		rp.queue = append(rp.queue, p)
		rp.mu.Unlock()
		return <-p.done
	}
	// None in flight: this report goes now, alone, from this goroutine
	// (no hand-off at light load); what queued meanwhile goes next.
	rp.inflight = true
	rp.mu.Unlock()
	rp.deliver([]*pendingReport{p})
	rp.mu.Lock()
	if len(rp.queue) > 0 {
		go rp.flush()
	} else {
		rp.inflight = false
	}
	rp.mu.Unlock()
	return <-p.done
}

// flush sends what is queued, batch after batch, until nothing is.
func (rp *reporter) flush() {
	for {
		rp.mu.Lock()
		if len(rp.queue) == 0 {
			rp.inflight = false
			rp.mu.Unlock()
			return
		}
		n := min(len(rp.queue), maxReportBatch)
		batch := append([]*pendingReport(nil), rp.queue[:n]...)
		rp.queue = append(rp.queue[:0], rp.queue[n:]...)
		rp.mu.Unlock()
		rp.deliver(batch)
	}
}

// deliver sends one batch, again while it fails in transit and leases
// last, and answers each report.
func (rp *reporter) deliver(batch []*pendingReport) {
	delay := 100 * time.Millisecond
	for len(batch) > 0 {
		var errs []error
		var err error
		if len(batch) == 1 {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(batch[0].ctx), 30*time.Second)
			_, err = rp.ten.Report(rctx, batch[0].id, batch[0].r)
			cancel()
			errs = []error{err}
		} else {
			items := make([]api.BatchReport, len(batch))
			for i, p := range batch {
				items[i] = api.BatchReport{JobID: p.id, ReportRequest: p.r}
			}
			rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			var res []api.BatchReportResult
			res, err = rp.ten.ReportBatch(rctx, items)
			cancel()
			errs = make([]error, len(batch))
			for i := range batch {
				switch {
				case err != nil:
					errs[i] = err
				case i < len(res) && res[i].Error != nil:
					e := *res[i].Error
					e.Status = e.Code.Status()
					errs[i] = &e
				}
			}
		}
		var again []*pendingReport
		for i, p := range batch {
			e := errs[i]
			switch {
			case e == nil:
				p.done <- nil
				continue
			case errors.Is(e, api.ErrStale):
				p.log.Warn("report refused by the fence; another attempt owns the job", "code", client.Code(e), "err", e)
			case !client.Retryable(e):
				p.log.Error("report rejected", "err", e)
			case rp.w.cfg.Clock.Now().After(p.lease.get()):
				p.log.Error("giving up on the report: the lease is over, the job will be retried", "err", e)
			default:
				again = append(again, p)
				continue
			}
			p.done <- e
		}
		if len(again) == 0 {
			return
		}
		again[0].log.Warn("report failed; retrying", "in", delay, "reports", len(again), "err", err)
		time.Sleep(delay)
		delay = min(delay*2, 5*time.Second)
		batch = again
	}
}
