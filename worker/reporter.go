package worker

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Reports and settlements are batched per tenant (batcher): sent at once
// when none is in flight, else together with the others waiting, each
// fenced on its own.

// errNoAnswer: the API answered a batch without a result for an item. A
// broken server, not a lost request: not sent again.
var errNoAnswer = errors.New("the API answered the batch without a result for this item")

// maxReportBatch bounds the reports of one request.
const maxReportBatch = 100

type reportItem struct {
	ctx context.Context // the job's: its values (a trace) go with the request
	id  string
	r   api.ReportRequest
}

type settleItem struct {
	ctx context.Context
	s   api.Settlement
}

// tenantBatchers are a tenant's report and settlement batchers.
type tenantBatchers struct {
	reports     *batcher[reportItem, struct{}]
	settlements *batcher[settleItem, api.SettleResult]
}

// batchers returns the tenant's batchers.
func (w *Worker) batchers(ten *client.Tenant) *tenantBatchers {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := w.reporters[ten.Name()]
	if b == nil {
		log := w.log.With("tenant", ten.Name())
		b = &tenantBatchers{
			reports: newBatcher(maxReportBatch, func(items []reportItem) ([]struct{}, []error) { return sendReports(ten, items) },
				func(n int, in time.Duration, err error) {
					log.Warn("report failed; retrying", "in", in, "reports", n, "err", err)
				}),
			settlements: newBatcher(api.MaxSettlements, func(ss []settleItem) ([]api.SettleResult, []error) { return sendSettlements(ten, ss) },
				func(n int, in time.Duration, err error) {
					log.Warn("settle failed; retrying", "in", in, "settlements", n, "err", err)
				}),
		}
		b.reports.queued, b.settlements.queued = &w.signals.ReportQueued, &w.signals.SettlementQueued
		w.reporters[ten.Name()] = b
	}
	return b
}

// sendContext is a send's context: a request for one item is traced under
// that item's job or delivery, a batch's under none of them (its first
// item's would be arbitrary). It outlives the items' own contexts, which
// end with their handlers, for 30 s.
func sendContext(first context.Context, n int) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(first)
	if n > 1 {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, 30*time.Second)
}

// sendReports makes one request: POST /jobs/{id}/report for one, POST
// /reports for several.
func sendReports(ten *client.Tenant, items []reportItem) ([]struct{}, []error) {
	ctx, cancel := sendContext(items[0].ctx, len(items))
	defer cancel()
	errs := make([]error, len(items))
	if len(items) == 1 {
		_, errs[0] = ten.Report(ctx, items[0].id, items[0].r)
		return nil, errs
	}
	batch := make([]api.BatchReport, len(items))
	for i, it := range items {
		batch[i] = api.BatchReport{JobID: it.id, ReportRequest: it.r}
	}
	res, err := ten.ReportBatch(ctx, batch)
	if refusedForContent(err) {
		// The API refused the request as a whole for what one report
		// holds (an output over the limit): each goes alone, so the
		// others are not refused with it.
		return eachAlone(items, func(it reportItem) (struct{}, error) {
			_, errs := sendReports(ten, []reportItem{it})
			return struct{}{}, errs[0]
		})
	}
	for i := range items {
		switch {
		case err != nil:
			errs[i] = err
		case i >= len(res):
			errs[i] = errNoAnswer
		case res[i].Error != nil:
			e := *res[i].Error
			e.Status = e.Code.Status()
			errs[i] = &e
		}
	}
	return nil, errs
}

// sendSettlements makes one POST /settle for the settlements.
func sendSettlements(ten *client.Tenant, items []settleItem) ([]api.SettleResult, []error) {
	ctx, cancel := sendContext(items[0].ctx, len(items))
	defer cancel()
	ss := make([]api.Settlement, len(items))
	for i, it := range items {
		ss[i] = it.s
	}
	res, err := ten.Settle(ctx, ss...)
	if len(items) > 1 && refusedForContent(err) {
		// Refused as a whole for what one settlement holds (a command the
		// API cannot take): each goes alone, for its own answer.
		return eachAlone(items, func(it settleItem) (api.SettleResult, error) {
			res, errs := sendSettlements(ten, []settleItem{it})
			if len(res) == 0 {
				return api.SettleResult{}, errs[0]
			}
			return res[0], errs[0]
		})
	}
	errs := make([]error, len(ss))
	for i := range ss {
		switch {
		case err != nil:
			errs[i] = err
		case i >= len(res):
			errs[i] = errNoAnswer
		}
	}
	return res, errs
}

// report sends a job's outcome and waits for the answer: nil once
// recorded (or a duplicate), else the refusal or the last failure. It goes
// with the tenant's other reports unless Config.SingleReports, and is sent
// again while it fails in transit and the lease lasts (a retried report
// that committed is answered as a duplicate, never applied twice).
func (w *Worker) report(ctx context.Context, ten *client.Tenant, id string, r api.ReportRequest, lease *leaseClock) error {
	b, item := w.batchers(ten).reports, reportItem{ctx, id, r}
	again := func(e error) bool { return w.reportAgain(e, lease) }
	var err error
	if w.cfg.SingleReports {
		_, err = b.alone(item, again)
	} else {
		_, err = b.do(item, again)
	}
	return err
}

// reportAgain decides a failed report: sent again while it may succeed
// and the lease lasts; the rest is given up (the attempt's line says so).
func (w *Worker) reportAgain(e error, lease *leaseClock) bool {
	return gaveUp(e) && !w.cfg.Clock.Now().After(lease.get())
}

// eachAlone sends the items one per request.
func eachAlone[T, R any](items []T, send func(T) (R, error)) ([]R, []error) {
	res, errs := make([]R, len(items)), make([]error, len(items))
	for i, it := range items {
		res[i], errs[i] = send(it)
	}
	return res, errs
}

// refusedForContent says the API refused a request for what it holds (400,
// 413): what one item of a batch holds can refuse the others with it. A
// refused token or a broken server would refuse each alone too.
func refusedForContent(err error) bool {
	var e *api.Error
	return errors.As(err, &e) && (e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge)
}
