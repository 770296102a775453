package cron

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/internal/ascii"
	"github.com/stile-run/stile/internal/printf"
)

// Schedule is a parsed cron expression.
type Schedule struct {
	expr   string
	every  time.Duration // @every: a fixed interval instead of fields
	fields [6]uint64     // second, minute, hour, day of month, month, day of week: bit sets
	// domStar and dowStar: the field was '*' (or '?'), which matters when
	// both days are restricted (then either may match, as in cron).
	domStar, dowStar bool
}

// String returns the expression as given.
func (s *Schedule) String() string { return s.expr }

type field struct {
	name     string
	min, max int
	names    map[string]int
}

var fields = [6]field{
	{name: "second", min: 0, max: 59},
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day of month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4,
		"may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}},
	{name: "day of week", min: 0, max: 7, names: map[string]int{"sun": 0, "mon": 1, "tue": 2,
		"wed": 3, "thu": 4, "fri": 5, "sat": 6}},
}

var descriptors = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

// ErrSyntax wraps every parse error.
var ErrSyntax = errors.New("cron expression")

// Parse reads an expression: six fields (second minute hour day-of-month
// month day-of-week), five (without seconds, which are then 0), a
// descriptor such as @hourly, or "@every 90s" (at least one second).
func Parse(expr string) (*Schedule, error) {
	e := ascii.TrimSpace(expr)
	s := &Schedule{expr: e}
	if rest, ok := strings.CutPrefix(e, "@every "); ok {
		d, err := time.ParseDuration(ascii.TrimSpace(rest))
		if err != nil || d < time.Second || d%time.Second != 0 {
			return nil, printf.Errorf("%w %q: @every takes a whole number of seconds, at least 1s", ErrSyntax, expr)
		}
		s.every = d
		return s, nil
	}
	if d, ok := descriptors[ascii.ToLower(e)]; ok {
		e = d
	}
	parts := ascii.Fields(e)
	if len(parts) == 5 {
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 6 {
		return nil, printf.Errorf("%w %q: want six fields (second minute hour day-of-month month day-of-week) or five", ErrSyntax, expr)
	}
	for i, p := range parts {
		bits, err := parseField(p, fields[i])
		if err != nil {
			return nil, printf.Errorf("%w %q: %s field %q: %v", ErrSyntax, expr, fields[i].name, p, err)
		}
		s.fields[i] = bits
	}
	if s.fields[5]&(1<<7) != 0 { // 7 is Sunday too
		s.fields[5] |= 1
	}
	s.domStar = parts[3] == "*" || parts[3] == "?"
	s.dowStar = parts[5] == "*" || parts[5] == "?"
	// Every calendar the fields can name comes round within horizon of any
	// day (29 February included); a schedule with no time in the horizon
	// from a leap year's start names a day no month has.
	if s.Next(neverProbe).IsZero() {
		return nil, printf.Errorf("%w %q: it never fires (no month it names has that day)", ErrSyntax, expr)
	}
	return s, nil
}

// neverProbe is where Parse looks for a schedule's first time: the start
// of a leap year.
var neverProbe = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// horizonYears is how far Next looks: past the longest gap between two 29
// Februaries (eight years, across a century that is not a leap year).
const horizonYears = 9

func parseField(p string, f field) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(p, ",") {
		lo, hi, step := f.min, f.max, 1
		rng, stepText, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max {
				return 0, printf.Errorf("step %q is not a number in 1-%d", stepText, f.max)
			}
			step = n
		}
		switch {
		case rng == "*" || rng == "?":
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = value(a, f); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = value(b, f); err != nil {
					return 0, err
				}
			} else if hasStep {
				hi = f.max
			}
			if hi < lo {
				return 0, printf.Errorf("range %s runs backwards", rng)
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << v
		}
	}
	return bits, nil
}

func value(s string, f field) (int, error) {
	if n, ok := f.names[ascii.ToLower(s)]; ok {
		return n, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, printf.Errorf("%q is not a number", s)
	}
	if n < f.min || n > f.max {
		return 0, printf.Errorf("%d is outside %d-%d", n, f.min, f.max)
	}
	return n, nil
}

// Next returns the first time strictly after t that the schedule names, in
// UTC, to the second; the zero time if there is none within horizonYears
// (Parse refuses a schedule that never fires, e.g. 30 February).
func (s *Schedule) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Second).Add(time.Second)
	if s.every > 0 {
		// Periods are aligned to the Unix epoch, so they do not drift with
		// when the schedule was written.
		sec := int64(s.every / time.Second)
		u := t.Unix()
		if r := u % sec; r != 0 {
			u += sec - r
		}
		return time.Unix(u, 0).UTC()
	}
	limit := t.AddDate(horizonYears, 0, 0)
	for t.Before(limit) {
		switch {
		case !s.has(4, int(t.Month())):
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		case !s.has(2, t.Hour()):
			t = t.Truncate(time.Hour).Add(time.Hour)
		case !s.has(1, t.Minute()):
			t = t.Truncate(time.Minute).Add(time.Minute)
		case !s.has(0, t.Second()):
			t = t.Add(time.Second)
		default:
			return t
		}
	}
	return time.Time{}
}

// Matches reports whether the schedule names t (to the second, in UTC).
func (s *Schedule) Matches(t time.Time) bool {
	t = t.UTC()
	if t.Nanosecond() != 0 {
		return false
	}
	if s.every > 0 {
		return t.Unix()%int64(s.every/time.Second) == 0
	}
	return s.has(0, t.Second()) && s.has(1, t.Minute()) && s.has(2, t.Hour()) &&
		s.has(4, int(t.Month())) && s.dayMatches(t)
}

func (s *Schedule) has(f, v int) bool { return s.fields[f]&(1<<v) != 0 }

// dayMatches applies cron's rule: when both day fields are restricted,
// either may match; otherwise the restricted one must.
func (s *Schedule) dayMatches(t time.Time) bool {
	dom, dow := s.has(3, t.Day()), s.has(5, int(t.Weekday()))
	if !s.domStar && !s.dowStar {
		return dom || dow
	}
	return dom && dow
}
