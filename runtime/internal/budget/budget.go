// Package budget cuts a page of rows at a byte budget: what a request
// reads into the module and encodes in its answer is bounded by the
// module's memory, not by how large the rows it pages through are.
package budget

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// Fit is how many of the first rows, whose sizes in bytes are given in
// order, fit in max bytes: at least one (a row of its own always fits a
// budget larger than the largest row the API admits), and all of them
// when max is 0 (no budget).
func Fit(sizes []int64, max int64) int {
	if max <= 0 {
		return len(sizes)
	}
	total := int64(0)
	for i, n := range sizes {
		total += n
		if total > max && i > 0 {
			return i
		}
	}
	return len(sizes)
}

// Query makes a page's SQL for the columns it selects and a limit.
type Query func(cols string, limit int) (string, []any)

// Limit is the limit that keeps a page within max bytes: it reads the
// size of each row of the page (size is an SQL expression of a row's
// columns) along the same range, without the rows, and cuts at what fits.
// cut says the page was cut short of limit. With max 0 it reads nothing.
func Limit(db *do.DB, max int64, limit int, size string, query Query) (n int, cut bool, err error) {
	if max <= 0 {
		return limit, false, nil
	}
	sql, args := query(size, limit)
	rows, err := db.Query(sql, args...)
	if err != nil {
		return 0, false, printf.Errorf("read the sizes of a page: %w", err)
	}
	sizes := make([]int64, 0, rows.Len())
	for rows.Next() {
		sizes = append(sizes, rows.Int(0))
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	if n := Fit(sizes, max); n < len(sizes) {
		return n, true, nil
	}
	return limit, false, nil
}
