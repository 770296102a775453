// Package usage meters a tenant: what its object served (requests,
// alarms, pushes, counted by the module) and what that cost the platform
// (storage rows and module time, measured by the host and handed in on
// every call as a running total), recorded by UTC day in one row per day;
// and the daily budget that refuses new work past it.
//
// The decisions are pure (time comes in as a value). The host's figures
// are recorded exactly once: a day's row keeps the host's running total it
// last recorded (a Mark), so a total handed in again, by a retried or a
// re-run call, adds only what grew since.
package usage

import (
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/printf"
)

// Mark is the host's running count of one instance of the tenant's
// object: Gen names the instance (a new one starts from zero), the rest
// are totals since it began — the requests and alarms it served (counted
// when they start, so a call's own header counts it) and what its module
// calls cost (counted when they end: storage rows read and written, time
// in the module). It crosses as the stile-usage request header,
// "gen,requests,alarms,rows read,rows written,module µs,mode". The host
// counts requests, not module calls: a held claim run again is one
// request. Mode is what the host asks of the module (Keep, Tail, Flush);
// it is not part of the count.
type Mark struct {
	Gen                                    string
	Requests, Alarms, Read, Written, Micro int64
	Mode                                   Mode
}

// Mode is how a host keeps its count, and so when the module records it.
type Mode string

const (
	// Keep: the host keeps its count for as long as the tenant may be
	// called again (a process's host, whose count outlives the module's
	// instances); it sends Flush before it forgets it.
	Keep Mode = "keep"
	// Tail: the host's count goes with the object's instance, which may
	// be evicted whenever it is idle (a Durable Object): the module sets
	// an alarm to record what is pending (AlarmAt).
	Tail Mode = "tail"
	// Flush: record what is pending now; the host is about to forget it.
	Flush Mode = "flush"
)

// MaxGen bounds a Mark's Gen.
const MaxGen = 64

// ParseMark reads a stile-usage header; ok is false for anything but a
// well-formed one (a host that counts nothing sends none).
func ParseMark(v string) (m Mark, ok bool) {
	parts := strings.Split(v, ",")
	if len(parts) != 7 || parts[0] == "" || len(parts[0]) > MaxGen {
		return Mark{}, false
	}
	m.Gen, m.Mode = parts[0], Mode(parts[6])
	if m.Mode != Keep && m.Mode != Tail && m.Mode != Flush {
		return Mark{}, false
	}
	for i, p := range m.totals() {
		n, err := strconv.ParseInt(parts[i+1], 10, 64)
		if err != nil || n < 0 {
			return Mark{}, false
		}
		*p = n
	}
	return m, true
}

func (m *Mark) totals() []*int64 {
	return []*int64{&m.Requests, &m.Alarms, &m.Read, &m.Written, &m.Micro}
}

// String is m as the stile-usage header carries it.
func (m Mark) String() string {
	return printf.Sprintf("%s,%d,%d,%d,%d,%d,%s", m.Gen, m.Requests, m.Alarms, m.Read, m.Written, m.Micro, string(m.Mode))
}

// usage is m's totals as a Usage.
func (m Mark) usage() api.Usage {
	return api.Usage{Requests: m.Requests, Alarms: m.Alarms, RowsRead: m.Read, RowsWritten: m.Written, ModuleMicros: m.Micro}
}

// Since is what the host counted after mark, up to cur: the difference on
// the same instance, and all of cur on another one. Nothing when cur is
// the zero Mark (the host counts nothing), nor when it is behind mark on
// the same instance (a call that began before the record: what it counts
// was recorded).
func Since(mark, cur Mark) api.Usage {
	if cur.Gen == "" {
		return api.Usage{}
	}
	if cur.Gen != mark.Gen {
		return cur.usage()
	}
	d := api.Usage{Requests: cur.Requests - mark.Requests, Alarms: cur.Alarms - mark.Alarms, RowsRead: cur.Read - mark.Read,
		RowsWritten: cur.Written - mark.Written, ModuleMicros: cur.Micro - mark.Micro}
	if d.Requests < 0 || d.Alarms < 0 || d.RowsRead < 0 || d.RowsWritten < 0 || d.ModuleMicros < 0 {
		return api.Usage{}
	}
	return d
}

// Add is a + b.
func Add(a, b api.Usage) api.Usage {
	return api.Usage{Requests: a.Requests + b.Requests, Alarms: a.Alarms + b.Alarms, RowsRead: a.RowsRead + b.RowsRead,
		RowsWritten: a.RowsWritten + b.RowsWritten, ModuleMicros: a.ModuleMicros + b.ModuleMicros, Pushes: a.Pushes + b.Pushes}
}

// Zero reports whether u counts nothing.
func Zero(u api.Usage) bool { return u == api.Usage{} }

// dayMs is a UTC day in Unix milliseconds (Unix time has no leap
// seconds). Days are computed here rather than with package time's
// layouts, which would add tens of KB to every module.
const dayMs = 24 * 60 * 60 * 1000

// Day is the UTC day of the Unix-ms time at, 2006-01-02.
func Day(at int64) string { return civil(floorDiv(at, dayMs)) }

// DayEnd is when the UTC day of at ends, in Unix ms.
func DayEnd(at int64) int64 { return (floorDiv(at, dayMs) + 1) * dayMs }

// ParseDay checks a day as the API takes it (2006-01-02, a real date
// within years 1-9999).
func ParseDay(s string) error {
	if _, ok := dayNumber(s); !ok {
		return printf.Errorf("%q is not a UTC date like 2026-01-31", s)
	}
	return nil
}

// AddDays is the day n days after day (before, for n < 0); day is valid.
func AddDays(day string, n int) string {
	d, _ := dayNumber(day)
	return civil(d + int64(n))
}

// dayNumber is the days since 1970-01-01 of a 2006-01-02 date.
func dayNumber(s string) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 || m < 1 || m > 12 || d < 1 || d > monthDays(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

func digits(s string) (int64, bool) {
	n := int64(0)
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

func monthDays(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil and civil convert between a proleptic Gregorian date and
// days since 1970-01-01, by eras of 400 years (146,097 days).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

func civil(days int64) string {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	y := yoe + era*400
	if m <= 2 {
		y++
	}
	b := make([]byte, 0, 10)
	b = pad(b, y, 4)
	b = append(b, '-')
	b = pad(b, m, 2)
	b = append(b, '-')
	return string(pad(b, d, 2))
}

func pad(b []byte, n int64, width int) []byte {
	s := strconv.FormatInt(n, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// The window of days a tenant keeps, and what GET /usage reads without
// ?from=.
const (
	KeepDays    = 400
	DefaultDays = 30
)

// How long the module holds counts before it records them: a busy tenant
// writes its day's row at most once in this time, whatever its rate. A
// host that keeps its count (Keep) lets it wait FlushEvery. Where the
// count goes with the instance (Tail), TailEvery is under the 10 s after
// which an idle Durable Object may leave memory: the alarm that records an
// idle tenant's last requests fires while its instance still holds them.
const (
	FlushEvery = 30 * time.Second
	TailEvery  = 5 * time.Second
)

// every is how long a host in mode lets counts wait.
func every(mode Mode) int64 {
	if mode == Tail {
		return TailEvery.Milliseconds()
	}
	return FlushEvery.Milliseconds()
}

// NoteEvery is how often a tenant tells the directory what it recorded:
// the fleet's view (GET /v1/tenants) is this fresh, and the directory is
// written at most this often per busy tenant.
const NoteEvery = 5 * time.Minute

// NoteDue says whether a record at now is told to the directory, which
// last heard at noted (0: not from this instance): after NoteEvery, or on
// a new UTC day.
func NoteDue(noted, now int64) bool {
	return noted == 0 || now-noted >= NoteEvery.Milliseconds() || Day(noted) != Day(now)
}

// Pending is what is counted and not recorded: the pushes the module
// sent, and since when something is (the Unix-ms time the module first
// saw it; 0: nothing). The host's figures are not kept here: they are
// its running Mark's, read again on every call.
type Pending struct {
	Pushes int64
	Since  int64
}

// Saw notes, at now, that something is pending (held, the host's figures
// since the last record, or pushes).
func (p *Pending) Saw(held api.Usage, now int64) {
	if p.Since == 0 && (!Zero(held) || p.Pushes > 0) {
		p.Since = now
	}
}

// Pushed adds n pushes sent at now.
func (p *Pending) Pushed(n int, now int64) {
	if n > 0 {
		p.Pushes += int64(n)
		p.Saw(api.Usage{}, now)
	}
}

// Add is what is pending in all: held, the host's figures, and p's.
func (p Pending) Add(held api.Usage) api.Usage {
	held.Pushes += p.Pushes
	return held
}

// Due says whether a call at now records what is pending (held: the
// host's figures since the last record, in mode): when it was first seen
// long enough ago (every), or on an earlier UTC day, or the host asks
// (Flush); and, for a host whose count goes with the instance (Tail), on
// an alarm while a request is pending, if this instance last recorded
// (recordedAt; 0: never) as long ago or more: an alarm after a quiet
// spell records the tail at once, and no alarm of its own is needed for
// it, while a busy tenant's alarms (a projection catching up after every
// append) leave it to the next record — the day's row is written at most
// once per interval, whatever the rate of requests or alarms.
func Due(p Pending, held api.Usage, mode Mode, now int64, alarm bool, recordedAt int64) bool {
	if p.Since == 0 {
		return false
	}
	return mode == Flush || now-p.Since >= every(mode) || Day(p.Since) != Day(now) ||
		mode == Tail && alarm && held.Requests > 0 && (recordedAt == 0 || now-recordedAt >= every(mode))
}

// AlarmAt is when the module wants an alarm that records what is pending
// (held, the host's figures since the last record), for a host whose
// count goes with the instance (Tail): TailEvery after it was first seen,
// when a request is among it; 0 otherwise, so that an alarm's own figures
// wait for the next request rather than set another alarm.
func AlarmAt(p Pending, held api.Usage, mode Mode) int64 {
	if mode != Tail || held.Requests == 0 || p.Since == 0 {
		return 0
	}
	return p.Since + TailEvery.Milliseconds()
}

// Over says whether a request finds today's usage past budget: which
// figure, how much was used and the limit. today counts the request
// itself (the host counts a request when it starts): it is past the budget
// when it is one more than the limit, or when the rows written before it
// reached the limit.
func Over(b api.Budget, today api.Usage) (figure string, used, limit int64, over bool) {
	switch {
	case b.RowsWrittenPerDay > 0 && today.RowsWritten >= b.RowsWrittenPerDay:
		return "rows_written_per_day", today.RowsWritten, b.RowsWrittenPerDay, true
	case b.RequestsPerDay > 0 && today.Requests > b.RequestsPerDay:
		return "requests_per_day", today.Requests, b.RequestsPerDay, true
	}
	return "", 0, 0, false
}

// Refusal is the answer to new work past the budget at now, for tenant:
// 429, with the seconds until the UTC day ends for Retry-After.
func Refusal(tenant string, b api.Budget, today api.Usage, now int64) (e *api.Error, retryAfter int64, ok bool) {
	figure, used, limit, over := Over(b, today)
	if !over {
		return nil, 0, false
	}
	end := DayEnd(now)
	retryAfter = (end - now + 999) / 1000
	return api.Refuse(api.CodeBudgetExceeded, "tenant %s is past its daily budget (%s %d; %d used today): new work is refused until %sT00:00:00Z, in %d s; PUT /v1/t/%s/budget raises it",
		tenant, figure, limit, used, Day(end), retryAfter, tenant), retryAfter, true
}
