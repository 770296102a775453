package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"text/tabwriter"

	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/cmd/stile/internal/bench"
)

// Cloudflare's prices for Durable Object SQLite beyond the Workers Paid
// plan's allowance, as of January 2026: per million rows.
const (
	dollarsPerMillionRowsWritten = 1.00
	dollarsPerMillionRowsRead    = 0.001
)

// benchRows prints the rows each operation reads and writes in a tenant's
// Durable Object, as workerd's own storage cursors count them: what
// Cloudflare bills an operation's storage by.
func benchRows(ctx context.Context, dir string, wasm []byte, n, history int) error {
	srv, err := startWorkerd(dir, "rows", wasm)
	if srv == nil || err != nil {
		return err
	}
	defer srv.Close()
	counter := &bench.RowCounter{Base: &http.Transport{}}
	d := bench.HTTP{C: client.New(srv.URL, benchToken, &http.Client{Transport: counter})}
	figures, err := bench.RowsPerOperation(ctx, d, counter, n, history)
	if err != nil {
		return fmt.Errorf("rows: %w", err)
	}
	fmt.Printf("rows per operation, workerd (Miniflare 4, one Durable Object, the storage cursors' counts; %d of each)\n", n)
	tw := tabwriter.NewWriter(os.Stdout, 2, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  operation\trows written\trows read\trequests\talarms\t$ per million (rows)\t")
	for _, f := range figures {
		cost := f.Written*dollarsPerMillionRowsWritten + f.Read*dollarsPerMillionRowsRead
		alarms := "" // a request's figure leaves out the alarms
		if f.Alarms > 0 {
			alarms = fmt.Sprint(f.Alarms)
		}
		fmt.Fprintf(tw, "  %s\t%.2f\t%.2f\t%d\t%s\t%.2f\t\n", f.Op, f.Written, f.Read, f.Requests, alarms, cost)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Printf("  (rows at $%.2f per million written and $%.3f per million read, Cloudflare's prices of January 2026; requests and duration are billed besides)\n",
		dollarsPerMillionRowsWritten, dollarsPerMillionRowsRead)
	fmt.Printf("  (a projection batch is the alarms' rows, from GET /usage less the requests' own, per event applied by %s: one row of its table each)\n\n",
		bench.Projection)
	return nil
}
