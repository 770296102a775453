package jsonwire

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

// Object writes one JSON object's members.
type Object struct {
	B []byte // what is written so far
	n int
}

func StartObject(b []byte) Object { return Object{B: append(b, '{')} }

func (o *Object) Key(k string) {
	if o.n > 0 {
		o.B = append(o.B, ',')
	}
	o.n++
	o.B = append(o.B, '"')
	o.B = append(o.B, k...)
	o.B = append(o.B, '"', ':')
}

func (o *Object) Str(k, v string) {
	o.Key(k)
	o.B = AppendString(o.B, v)
}

func (o *Object) StrOmit(k, v string) {
	if v != "" {
		o.Str(k, v)
	}
}

func (o *Object) Int(k string, v int64) {
	o.Key(k)
	o.B = strconv.AppendInt(o.B, v, 10)
}

func (o *Object) IntOmit(k string, v int64) {
	if v != 0 {
		o.Int(k, v)
	}
}

func (o *Object) Bool(k string, v bool) {
	o.Key(k)
	o.B = strconv.AppendBool(o.B, v)
}

func (o *Object) Time(k string, t time.Time) {
	o.Key(k)
	o.B = AppendTime(o.B, t)
}

func (o *Object) TimeOmit(k string, t *time.Time) {
	if t != nil {
		o.Time(k, *t)
	}
}

// raw writes a JSON value that is already encoded; empty writes null.
func (o *Object) Raw(k string, v []byte) {
	o.Key(k)
	if len(v) == 0 {
		o.B = append(o.B, "null"...)
		return
	}
	o.B = append(o.B, v...)
}

func (o *Object) RawOmit(k string, v []byte) {
	if len(v) > 0 {
		o.Raw(k, v)
	}
}

func (o *Object) End() []byte { return append(o.B, '}') }

func (o *Object) Null(k string) {
	o.Key(k)
	o.B = append(o.B, "null"...)
}

func (o *Object) Strings(k string, v []string) {
	o.Key(k)
	o.B = AppendStrings(o.B, v)
}

// AppendStrings appends v as a JSON array of strings.
func AppendStrings(b []byte, v []string) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendString(b, s)
	}
	return append(b, ']')
}

// counts writes a map of counts with its keys sorted.
func (o *Object) Counts(k string, m map[string]int64) {
	o.Key(k)
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	c := StartObject(o.B)
	for _, key := range keys {
		c.Int(key, m[key])
	}
	o.B = c.End()
}

// AppendTime writes t as the API writes times (api.TimeLayout: RFC 3339,
// UTC, milliseconds), quoted.
func AppendTime(b []byte, t time.Time) []byte {
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

// AppendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// U+2028 and U+2029 are escaped so the output is also valid JavaScript.
func AppendString(b []byte, s string) []byte {
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

// Appender is a value that writes itself as JSON.
type Appender interface{ AppendJSON([]byte) []byte }

// AppendArray appends xs as a JSON array.
func AppendArray[T Appender](b []byte, xs []T) []byte {
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = x.AppendJSON(b)
	}
	return append(b, ']')
}
