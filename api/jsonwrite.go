package api

import (
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// The API's responses are encoded by hand, without reflection: inside a
// tenant module (Go compiled to Wasm) encoding/json costs tens of
// microseconds per object, most of a request. MarshalJSON delegates here,
// so json.Marshal of these types gives the very same bytes anywhere.

// TimeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// object writes one JSON object's members.
type object struct {
	b []byte
	n int
}

func startObject(b []byte) object { return object{b: append(b, '{')} }

func (o *object) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *object) str(k, v string) {
	o.key(k)
	o.b = appendString(o.b, v)
}

func (o *object) strOmit(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *object) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *object) intOmit(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}

func (o *object) bool(k string, v bool) {
	o.key(k)
	o.b = strconv.AppendBool(o.b, v)
}

func (o *object) time(k string, t time.Time) {
	o.key(k)
	o.b = appendTime(o.b, t)
}

func (o *object) timeOmit(k string, t *time.Time) {
	if t != nil {
		o.time(k, *t)
	}
}

// raw writes a JSON value that is already encoded; empty writes null.
func (o *object) raw(k string, v []byte) {
	o.key(k)
	if len(v) == 0 {
		o.b = append(o.b, "null"...)
		return
	}
	o.b = append(o.b, v...)
}

func (o *object) rawOmit(k string, v []byte) {
	if len(v) > 0 {
		o.raw(k, v)
	}
}

func (o *object) end() []byte { return append(o.b, '}') }

func (o *object) strings(k string, v []string) {
	o.key(k)
	o.b = AppendStrings(o.b, v)
}

// AppendStrings appends v as a JSON array of strings.
func AppendStrings(b []byte, v []string) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// counts writes a map of counts with its keys sorted.
func (o *object) counts(k string, m map[string]int64) {
	o.key(k)
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	c := startObject(o.b)
	for _, key := range keys {
		c.int(key, m[key])
	}
	o.b = c.end()
}

// appendTime writes t in TimeLayout, quoted.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	ms := t.Nanosecond() / 1e6
	b = append(b, '"')
	if y >= 0 && y <= 9999 {
		b = append4(b, y)
	} else { // outside RFC 3339; the API refuses such times on input
		b = strconv.AppendInt(b, int64(y), 10)
	}
	b = append(b, '-')
	b = append2(b, int(mo))
	b = append(b, '-')
	b = append2(b, d)
	b = append(b, 'T')
	b = append2(b, h)
	b = append(b, ':')
	b = append2(b, mi)
	b = append(b, ':')
	b = append2(b, s)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z', '"')
	return b
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }

func append4(b []byte, n int) []byte {
	return append(b, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is also valid JavaScript.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSON appends e as JSON.
func (e Error) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("code", string(e.Code))
	o.str("message", e.Message)
	o.strOmit("stream", e.Stream)
	if e.CurrentVersion != nil {
		o.int("current_version", *e.CurrentVersion)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (e Error) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends a as JSON.
func (a Attempt) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.int("attempt", a.Attempt)
	o.str("worker", a.Worker)
	o.time("claimed_at", a.ClaimedAt)
	o.time("lease_until", a.LeaseUntil)
	o.timeOmit("ended_at", a.EndedAt)
	o.strOmit("outcome", a.Outcome)
	o.strOmit("error", a.Error)
	o.strOmit("noticed_by", a.NoticedBy)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (a Attempt) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r Rejection) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.time("at", r.At)
	o.str("request", r.Request)
	o.str("worker", r.Worker)
	o.int("attempt", r.Attempt)
	o.strOmit("outcome", r.Outcome)
	o.str("code", string(r.Code))
	o.str("message", r.Message)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r Rejection) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends j as JSON.
func (j Job) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("id", j.ID)
	o.str("kind", j.Kind)
	o.str("queue", j.Queue)
	o.int("priority", int64(j.Priority))
	o.rawOmit("args", j.Args)
	o.str("state", j.State)
	o.int("attempt", j.Attempt)
	o.int("failures", j.Failures)
	o.int("max_attempts", j.MaxAttempts)
	o.int("lease_ms", j.LeaseMs)
	o.int("timeout_ms", j.TimeoutMs)
	o.time("run_at", j.RunAt)
	o.time("created_at", j.CreatedAt)
	o.timeOmit("finished_at", j.FinishedAt)
	o.rawOmit("output", j.Output)
	o.strOmit("last_error", j.LastError)
	o.strings("tags", j.Tags)
	o.strOmit("unique_key", j.UniqueKey)
	o.strOmit("concurrency_key", j.ConcurrencyKey)
	o.intOmit("pending_parents", j.PendingParents)
	if j.RunRegardless {
		o.bool("run_regardless", true)
	}
	o.timeOmit("cancel_requested_at", j.CancelRequestedAt)
	if j.Existing {
		o.bool("existing", true)
	}
	if j.Running != nil {
		o.key("running")
		o.b = j.Running.AppendJSON(o.b)
	}
	if len(j.DependsOn) > 0 {
		o.key("depends_on")
		o.b = appendArray(o.b, j.DependsOn)
	}
	if len(j.Attempts) > 0 {
		o.key("attempts")
		o.b = appendArray(o.b, j.Attempts)
	}
	if len(j.Rejections) > 0 {
		o.key("rejections")
		o.b = appendArray(o.b, j.Rejections)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (j Job) MarshalJSON() ([]byte, error) { return j.AppendJSON(nil), nil }

type appender interface{ AppendJSON([]byte) []byte }

func appendArray[T appender](b []byte, xs []T) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = x.AppendJSON(b)
	}
	return append(b, ']')
}

// AppendJSON appends e as JSON.
func (e EnqueueRequest) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("kind", e.Kind)
	o.rawOmit("args", e.Args)
	o.strOmit("queue", e.Queue)
	if e.Priority != nil {
		o.int("priority", int64(*e.Priority))
	}
	o.timeOmit("run_at", e.RunAt)
	if e.MaxAttempts != 0 {
		o.int("max_attempts", int64(e.MaxAttempts))
	}
	o.intOmit("lease_ms", e.LeaseMs)
	o.intOmit("timeout_ms", e.TimeoutMs)
	if len(e.Tags) > 0 {
		o.strings("tags", e.Tags)
	}
	o.strOmit("unique_key", e.UniqueKey)
	o.intOmit("unique_window_ms", e.UniqueWindowMs)
	o.strOmit("concurrency_key", e.ConcurrencyKey)
	if len(e.DependsOn) > 0 {
		o.strings("depends_on", e.DependsOn)
	}
	if e.RunRegardless {
		o.bool("run_regardless", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (e EnqueueRequest) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r EnqueueBatchResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("jobs")
	o.b = appendArray(o.b, r.Jobs)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r EnqueueBatchResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends c as JSON.
func (c ClaimedJob) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("id", c.ID)
	o.str("kind", c.Kind)
	o.str("queue", c.Queue)
	o.raw("args", c.Args)
	o.int("attempt", c.Attempt)
	o.int("max_attempts", c.MaxAttempts)
	o.int("failures", c.Failures)
	o.int("lease_ms", c.LeaseMs)
	o.int("timeout_ms", c.TimeoutMs)
	o.time("lease_until", c.LeaseUntil)
	o.str("lease_token", c.LeaseToken)
	o.time("created_at", c.CreatedAt)
	o.strings("tags", c.Tags)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (c ClaimedJob) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ClaimResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.time("now", r.Now)
	o.key("jobs")
	o.b = appendArray(o.b, r.Jobs)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ClaimResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r HeartbeatResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.time("now", r.Now)
	o.time("lease_until", r.LeaseUntil)
	if r.CancelRequested {
		o.bool("cancel_requested", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r HeartbeatResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ReportResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("job_id", r.JobID)
	o.str("state", r.State)
	o.int("attempt", r.Attempt)
	o.int("failures", r.Failures)
	o.time("run_at", r.RunAt)
	if r.Duplicate {
		o.bool("duplicate", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ReportResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r BatchReportResult) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("job_id", r.JobID)
	o.strOmit("state", r.State)
	if r.Duplicate {
		o.bool("duplicate", true)
	}
	if r.Error != nil {
		o.key("error")
		o.b = r.Error.AppendJSON(o.b)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r BatchReportResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r BatchReportResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("results")
	o.b = appendArray(o.b, r.Results)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r BatchReportResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends s as JSON.
func (s Status) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("tenant", s.Tenant)
	o.time("now", s.Now)
	o.int("schema_version", s.SchemaVersion)
	o.timeOmit("alarm_at", s.AlarmAt)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (s Status) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

// AppendJSON appends d as JSON.
func (d Dependency) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("job_id", d.JobID)
	o.strOmit("resolved", d.Resolved)
	o.timeOmit("resolved_at", d.ResolvedAt)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (d Dependency) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ListResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("jobs")
	o.b = appendArray(o.b, r.Jobs)
	o.strOmit("next", r.Next)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ListResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends q as JSON.
func (q QueueCounts) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("queue", q.Queue)
	o.counts("counts", q.Counts)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (q QueueCounts) MarshalJSON() ([]byte, error) { return q.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r QueuesResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("queues")
	o.b = appendArray(o.b, r.Queues)
	o.counts("finished", r.Finished)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r QueuesResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends l as JSON.
func (l Limit) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("key", l.Key)
	o.int("slots", l.Slots)
	o.int("in_use", l.InUse)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (l Limit) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r LimitsResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("limits")
	o.b = appendArray(o.b, r.Limits)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r LimitsResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends sc as JSON.
func (sc Schedule) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("name", sc.Name)
	o.str("cron", sc.Cron)
	o.raw("job", sc.Job)
	if sc.Paused {
		o.bool("paused", true)
	}
	o.time("next_at", sc.NextAt)
	o.timeOmit("last_at", sc.LastAt)
	o.strOmit("last_job_id", sc.LastJobID)
	o.strOmit("last_error", sc.LastError)
	o.time("created_at", sc.CreatedAt)
	o.time("updated_at", sc.UpdatedAt)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (sc Schedule) MarshalJSON() ([]byte, error) { return sc.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r SchedulesResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("schedules")
	o.b = appendArray(o.b, r.Schedules)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r SchedulesResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r TxResult) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.raw("result", r.Result)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r TxResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }
