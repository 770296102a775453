package refunds_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/examples/refunds"
	"github.com/stile-run/stile/examples/refunds/handler"
	"github.com/stile-run/stile/stiletest"
	"github.com/stile-run/stile/worker"
)

// provider refunds once per idempotency key, and fails its first answer
// after refunding, as if the network dropped it.
type provider struct {
	mu      sync.Mutex
	calls   int
	refunds map[string]string
}

func (p *provider) Refund(_ context.Context, key, payment string, amount int64) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	id, ok := p.refunds[key]
	if !ok {
		id = fmt.Sprintf("re_%d", len(p.refunds)+1)
		p.refunds[key] = id
		fmt.Printf("refunded %d on %s as %s\n", amount, payment, id)
	}
	if p.calls == 1 {
		return "", errors.New("connection reset") // the refund happened; its answer was lost
	}
	return id, nil
}

// The module runs in-process; a worker runs the refund policy. The first
// attempt's answer is lost after the provider refunded, so the policy
// runs twice, with the same idempotency key: one refund, recorded once.
func Example() {
	h, _ := stiletest.Start(stiletest.Config{App: refunds.App(), RealClock: true})
	defer h.Close()
	acme := h.Tenant("acme")
	ctx := context.Background()

	prov := &provider{refunds: map[string]string{}}
	w, _ := worker.New(worker.Config{URL: h.URL, Token: h.Token(), Tenants: []string{"acme"},
		Logger: slog.New(slog.DiscardHandler), PollWait: time.Second})
	w.HandleReaction(refunds.RefundPolicy, handler.Refund(prov))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()

	pay, _ := api.CommandOf("pay-1", "payment", "p1", refunds.Pay{Amount: 4200})
	if _, err := acme.Command(ctx, pay); err != nil {
		fmt.Println(err)
	}
	refund, _ := api.CommandOf("refund-1", "payment", "p1", refunds.RequestRefund{})
	if _, err := acme.Command(ctx, refund); err != nil {
		fmt.Println(err)
	}
	var events []api.Event
	for start := time.Now(); len(events) < 3 && time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		page, _ := acme.Stream(ctx, api.StreamOf("payment", "p1"), 1, 10)
		events = page.Events
	}
	stop()
	<-done
	for _, e := range events {
		fmt.Println(e.Version, e.Type, string(e.Data))
	}
	fmt.Println("provider calls:", prov.calls)
	// Output:
	// refunded 4200 on p1 as re_1
	// 1 Paid {"amount":4200}
	// 2 RefundRequested {"amount":4200}
	// 3 Refunded {"refund_id":"re_1"}
	// provider calls: 2
}
