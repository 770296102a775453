package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
)

// Reports and settlements are batched per tenant (batcher): sent at once
// when none is in flight, else together with the others waiting, each
// fenced on its own.

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
		w.reporters[ten.Name()] = b
	}
	return b
}

// sendReports makes one request: POST /jobs/{id}/report for one, POST
// /reports for several.
func sendReports(ten *client.Tenant, items []reportItem) ([]struct{}, []error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(items[0].ctx), 30*time.Second)
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
	if err != nil && !client.Retryable(err) {
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
			errs[i] = errors.New("the batch answered no result for this report")
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(items[0].ctx), 30*time.Second)
	defer cancel()
	ss := make([]api.Settlement, len(items))
	for i, it := range items {
		ss[i] = it.s
	}
	res, err := ten.Settle(ctx, ss...)
	if err != nil && len(items) > 1 && !client.Retryable(err) {
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
			errs[i] = errors.New("settle answered no result")
		}
	}
	return res, errs
}

// sendReport sends a job's report and waits for the answer: nil once recorded
// (or a duplicate), else the refusal or the last failure. It is sent again
// while it fails in transit and the lease lasts.
func (w *Worker) sendReport(ctx context.Context, ten *client.Tenant, id string, r api.ReportRequest, lease *leaseClock, log *slog.Logger) error {
	if w.cfg.SingleReports {
		return w.sendReportAlone(ctx, ten, id, r, lease, log)
	}
	_, err := w.batchers(ten).reports.do(reportItem{ctx, id, r}, func(e error) bool { return w.reportAgain(e, lease, log) })
	return err
}

// sendReportAlone is sendReport with one report per request, never
// gathered with others (Config.SingleReports).
func (w *Worker) sendReportAlone(ctx context.Context, ten *client.Tenant, id string, r api.ReportRequest, lease *leaseClock, log *slog.Logger) error {
	delay := 100 * time.Millisecond
	for {
		_, errs := sendReports(ten, []reportItem{{ctx, id, r}})
		if errs[0] == nil || !w.reportAgain(errs[0], lease, log) {
			return errs[0]
		}
		log.Warn("report failed; retrying", "in", delay, "err", errs[0])
		time.Sleep(delay)
		delay = min(delay*2, 5*time.Second)
	}
}

// reportAgain decides a failed report: sent again while it may succeed
// and the lease lasts; the rest is logged and given up.
func (w *Worker) reportAgain(e error, lease *leaseClock, log *slog.Logger) bool {
	switch {
	case errors.Is(e, api.ErrStale):
		log.Warn("report refused by the fence; another attempt owns the job", "code", client.Code(e), "err", e)
	case !client.Retryable(e):
		log.Error("report rejected", "err", e)
	case w.cfg.Clock.Now().After(lease.get()):
		log.Error("giving up on the report: the lease is over, the job will be retried", "err", e)
	default:
		return true
	}
	return false
}

// eachAlone sends the items one per request.
func eachAlone[T, R any](items []T, send func(T) (R, error)) ([]R, []error) {
	res, errs := make([]R, len(items)), make([]error, len(items))
	for i, it := range items {
		res[i], errs[i] = send(it)
	}
	return res, errs
}
