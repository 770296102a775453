package api

import (
	"sort"
	"strconv"
	"time"
	"unicode/utf8"
)

// The API's types encode themselves, without reflection: inside a tenant
// module (Go compiled to Wasm) encoding/json costs tens of microseconds per
// object, most of a request. api/internal/apigen writes each type's
// AppendJSON (json_gen.go) from its definition, calling the primitives
// here; MarshalJSON delegates to it, so json.Marshal of these types gives
// the very same bytes anywhere.

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

func (o *object) null(k string) {
	o.key(k)
	o.b = append(o.b, "null"...)
}

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

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
