package usage

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// Recorded is what the day's row says: its day, what was recorded on it,
// and the host's total it last recorded. Day is "" when no row exists.
type Recorded struct {
	Day   string
	Usage api.Usage
	Mark  Mark
}

// Latest reads the newest day's row: what the module's start needs to go
// on recording (the host's last total) and to check today's budget.
func Latest(db *do.DB) (Recorded, error) {
	rows, err := db.Query(`SELECT day, requests, alarms, rows_read, rows_written, module_us, pushes, mark
		FROM stile_usage ORDER BY day DESC LIMIT 1`)
	if err != nil {
		return Recorded{}, printf.Errorf("read the latest usage: %w", err)
	}
	if !rows.Next() {
		return Recorded{}, rows.Err()
	}
	r := Recorded{Day: rows.Text(0), Usage: scan(rows, 1)}
	r.Mark, _ = ParseMark(rows.Text(7))
	return r, rows.Err()
}

// Record adds u to day's row and keeps mark as the host's total recorded.
// On a day's first record it deletes the days older than KeepDays.
func Record(db *do.DB, day string, u api.Usage, mark Mark, firstOfDay bool) error {
	if err := db.Exec(`INSERT INTO stile_usage (day, requests, alarms, rows_read, rows_written, module_us, pushes, mark)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (day) DO UPDATE SET requests = requests + excluded.requests, alarms = alarms + excluded.alarms,
		rows_read = rows_read + excluded.rows_read, rows_written = rows_written + excluded.rows_written,
		module_us = module_us + excluded.module_us, pushes = pushes + excluded.pushes, mark = excluded.mark`,
		day, u.Requests, u.Alarms, u.RowsRead, u.RowsWritten, u.ModuleMicros, u.Pushes, mark.String()); err != nil {
		return printf.Errorf("record the usage of %s: %w", day, err)
	}
	if firstOfDay {
		if err := db.Exec(`DELETE FROM stile_usage WHERE day < ?`, AddDays(day, -KeepDays)); err != nil {
			return printf.Errorf("forget the usage before %s: %w", AddDays(day, -KeepDays), err)
		}
	}
	return nil
}

// Days reads the recorded days from from to to inclusive, oldest first.
func Days(db *do.DB, from, to string) ([]api.UsageDay, error) {
	rows, err := db.Query(`SELECT day, requests, alarms, rows_read, rows_written, module_us, pushes
		FROM stile_usage WHERE day >= ? AND day <= ? ORDER BY day`, from, to)
	if err != nil {
		return nil, printf.Errorf("read the usage from %s to %s: %w", from, to, err)
	}
	var days []api.UsageDay
	for rows.Next() {
		days = append(days, api.UsageDay{Day: rows.Text(0), Usage: scan(rows, 1)})
	}
	return days, rows.Err()
}

// scan reads a Usage from the six columns at i.
func scan(rows *do.Rows, i int) api.Usage {
	return api.Usage{Requests: rows.Int(i), Alarms: rows.Int(i + 1), RowsRead: rows.Int(i + 2),
		RowsWritten: rows.Int(i + 3), ModuleMicros: rows.Int(i + 4), Pushes: rows.Int(i + 5)}
}
