package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sort"
	"strconv"

	"github.com/stile-run/stile/api"
)

// ---- stile usage, stile budget ----

// runUsage prints what tenants used: one tenant's days (--tenant), or the
// fleet's latest reported day from the directory.
func runUsage(args []string) error {
	o := newOps("usage", "usage [--tenant NAME [--from DAY] [--to DAY]] [flags]", true)
	from := o.fs.String("from", "", "first UTC day (2006-01-02; default: 29 days before --to)")
	to := o.fs.String("to", "", "last UTC day (default: today)")
	if _, err := o.parse(args); err != nil {
		return err
	}
	if *o.tenant == "" {
		if *from != "" || *to != "" {
			return &exitError{exitUsage, errors.New("--from and --to read one tenant's days: name it with --tenant")}
		}
		return o.fleetUsage()
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	u, err := ten.Usage(context.Background(), *from, *to)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(u)
	}
	rows := make([][]string, 0, len(u.Days)+1)
	for _, d := range u.Days {
		rows = append(rows, usageRow(d.Day, d.Usage))
	}
	rows = append(rows, usageRow("total", u.Total))
	o.table("DAY\tREQUESTS\tALARMS\tROWS READ\tROWS WRITTEN\tMODULE S\tPUSHES", rows)
	fmt.Fprintf(o.out, "tenant %s, %s to %s (UTC); budget: %s\n", u.Tenant, u.From, u.To, budgetText(u.Budget))
	if u.Refusing != "" {
		fmt.Fprintf(o.out, "refusing new work: past %s, until %s\n", u.Refusing, when(u.RefusingUntil))
	}
	return nil
}

// fleetUsage prints each tenant's usage as it last reported it to the
// directory (at most 5 minutes old while it is busy).
func (o *ops) fleetUsage() error {
	all, err := o.allTenants(false)
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(all)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	rows := make([][]string, 0, len(all))
	for _, t := range all {
		if t.Usage == nil {
			rows = append(rows, []string{t.Name, "-", "-", "-", "-", "-", "-", "-"})
			continue
		}
		rows = append(rows, append([]string{t.Name}, usageRow(t.Usage.Day, t.Usage.Usage)...))
	}
	o.table("TENANT\tDAY\tREQUESTS\tALARMS\tROWS READ\tROWS WRITTEN\tMODULE S\tPUSHES", rows)
	fmt.Fprintln(o.out, "as each tenant last reported it (every 5 minutes while busy); stile usage --tenant NAME is exact")
	return nil
}

func usageRow(day string, u api.Usage) []string {
	return []string{day, strconv.FormatInt(u.Requests, 10), strconv.FormatInt(u.Alarms, 10), strconv.FormatInt(u.RowsRead, 10),
		strconv.FormatInt(u.RowsWritten, 10), strconv.FormatFloat(float64(u.ModuleMicros)/1e6, 'f', 3, 64), strconv.FormatInt(u.Pushes, 10)}
}

func budgetText(b api.Budget) string {
	if b == (api.Budget{}) {
		return "none"
	}
	text := func(n int64) string {
		if n == 0 {
			return "no limit"
		}
		return strconv.FormatInt(n, 10)
	}
	return "rows written per day " + text(b.RowsWrittenPerDay) + ", requests per day " + text(b.RequestsPerDay)
}

// runBudget sets a tenant's daily budget, or clears it (it then follows
// the module's).
func runBudget(args []string) error {
	o := newOps("budget", "budget --tenant NAME (--rows-written N | --requests N | --clear) [flags]", true)
	rows := o.fs.Int64("rows-written", 0, "rows written per UTC day before new work is refused (0: no limit; not given: as it is)")
	requests := o.fs.Int64("requests", 0, "requests per UTC day before new work is refused (0: no limit; not given: as it is)")
	clear := o.fs.Bool("clear", false, "remove the tenant's own budget: it follows the module's")
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &exitError{exitUsage, fmt.Errorf("budget takes flags only, not %q", pos[0])}
	}
	given := map[string]bool{}
	o.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if set := given["rows-written"] || given["requests"]; set == *clear {
		return &exitError{exitUsage, errors.New("give --rows-written or --requests (or both), or --clear")}
	}
	ten, err := o.ten()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var b api.BudgetResponse
	switch {
	case *clear:
		b, err = ten.ClearBudget(ctx)
	default:
		// A figure not given stays as it is in force.
		next := api.Budget{RowsWrittenPerDay: *rows, RequestsPerDay: *requests}
		if !given["rows-written"] || !given["requests"] {
			u, err := ten.Usage(ctx, "", "")
			if err != nil {
				return err
			}
			if !given["rows-written"] {
				next.RowsWrittenPerDay = u.Budget.RowsWrittenPerDay
			}
			if !given["requests"] {
				next.RequestsPerDay = u.Budget.RequestsPerDay
			}
		}
		b, err = ten.SetBudget(ctx, next)
	}
	if err != nil {
		return err
	}
	if *o.asJSON {
		return o.printJSON(b)
	}
	whose := "its own"
	if !b.Overridden {
		whose = "the module's"
	}
	fmt.Fprintf(o.out, "tenant %s: budget %s (%s)\n", ten.Name(), budgetText(b.Effective), whose)
	return nil
}
