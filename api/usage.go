package api

import "time"

// Usage is what a tenant used over a period (GET /usage): the requests
// its object served and the alarms it ran, the storage rows they read and
// wrote, the time spent inside the module and the pushes it sent to
// executors. Rows are the platform's own counts where the host has them
// (Cloudflare's storage cursors, every index entry included); module time
// only where the host's clock runs while the module does (workerd's stands
// still: at the edge it is 0, and Cloudflare's duration metric is the
// figure). docs/OPERATIONS.md says what each host counts.
type Usage struct {
	Requests     int64 `json:"requests"`
	Alarms       int64 `json:"alarms"`
	RowsRead     int64 `json:"rows_read"`
	RowsWritten  int64 `json:"rows_written"`
	ModuleMicros int64 `json:"module_us"`
	Pushes       int64 `json:"pushes"`
}

// UsageDay is one UTC day of a tenant's usage.
type UsageDay struct {
	// Day is the UTC date, 2006-01-02.
	Day string `json:"day"`
	Usage
}

// UsageResponse is a tenant's usage by UTC day, oldest first, from From to
// To inclusive (GET /usage?from=&to=; days with nothing used are left
// out), their total, and the tenant's daily budget. Today's figures
// include what the object counted and has not recorded yet.
type UsageResponse struct {
	Tenant string     `json:"tenant"`
	From   string     `json:"from"`
	To     string     `json:"to"`
	Days   []UsageDay `json:"days"`
	Total  Usage      `json:"total"`
	Budget Budget     `json:"budget"`
	// Refusing says the tenant is over its budget today: enqueues,
	// commands, appends and transactions answer 429 until RefusingUntil.
	Refusing      string     `json:"refusing,omitempty"`
	RefusingUntil *time.Time `json:"refusing_until,omitempty"`
}

// Budget is a tenant's daily budget: past either figure in a UTC day, new
// work (enqueues, commands, appends, transactions) is refused with 429 and
// Retry-After until the day ends; work already started (claims,
// heartbeats, reports, settlements) and reads always go on. 0 is no limit.
// The module may set a default for every tenant (runtime.App.DailyBudget);
// PUT /budget sets the tenant's own, which replaces it whole.
//
//stile:json DecodeBudget
type Budget struct {
	RowsWrittenPerDay int64 `json:"rows_written_per_day"`
	RequestsPerDay    int64 `json:"requests_per_day"`
}

// MaxBudget bounds each figure of a Budget.
const MaxBudget = 1 << 50

// Check refuses a figure out of bounds, naming it.
func (b Budget) Check() *Error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"rows_written_per_day", b.RowsWrittenPerDay}, {"requests_per_day", b.RequestsPerDay}} {
		if f.v < 0 || f.v > MaxBudget {
			return Refuse(CodeInvalidRequest, "%s %d must be 0 (no limit) or within 1-%d", f.name, f.v, int64(MaxBudget))
		}
	}
	return nil
}

// BudgetResponse is a tenant's budget (PUT /budget): the one in force, the
// module's default, and whether the tenant overrides it.
type BudgetResponse struct {
	Effective  Budget `json:"effective"`
	Module     Budget `json:"module"`
	Overridden bool   `json:"overridden"`
}
