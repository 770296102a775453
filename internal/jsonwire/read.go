package jsonwire

import (
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stile-run/stile/internal/printf"
)

// Request bodies are decoded strictly, without reflection: unknown fields,
// repeated fields, values of the wrong type and trailing data are refused
// with a message that names the problem, as encoding/json's
// DisallowUnknownFields would. (Within a Wasm module this is several times
// cheaper than reflection.) api/internal/apigen writes each request
// type's decoder (api/json_gen.go) from its definition, calling the
// primitives here.
//
// Answers are read leniently instead (NewAnswerReader), as encoding/json
// reads them: a client skips the fields a newer server added.

// DecodeError is a body that is not the JSON a request expects.
//
//stile:json -
type DecodeError struct{ Msg string }

func (e *DecodeError) Error() string { return e.Msg }

// Reader reads one JSON document; the generated decoders and the
// module's own readers call its methods.
type Reader struct {
	b []byte
	i int
	// marks collects the presence bits of each object of a type with
	// "//stile:json fields", as its decoding ends.
	marks []uint64
	// answer reads an answer: unknown fields are skipped and a repeated
	// one's last value wins.
	answer bool
}

// NewReader reads b, a request, strictly.
func NewReader(b []byte) Reader { return Reader{b: b} }

// NewAnswerReader reads b, an answer, as encoding/json would: the
// generated decoders skip fields they do not know, and a repeated field's
// last value wins.
func NewAnswerReader(b []byte) Reader { return Reader{b: b, answer: true} }

// Marks are the presence bits of each object of a type with
// "//stile:json fields" decoded so far, in the order their decoding ended.
func (r *Reader) Marks() []uint64 { return r.marks }

// AtNull reports whether a null is next. (Not inlined: peek is a lot of
// code, and only decoders that track presence call this, once a field.)
//
//go:noinline
func (r *Reader) AtNull() bool { return r.peek() == 'n' }

// Mark records the presence bits of an object as its decoding ends. (Not
// inlined: growing the slice is a lot of code.)
//
//go:noinline
func (r *Reader) Mark(f uint64) { r.marks = append(r.marks, f) }

func (r *Reader) fail(format string, args ...any) error {
	return &DecodeError{Msg: printf.Sprintf("malformed JSON at byte %d: ", r.i) + printf.Sprintf(format, args...)}
}

func (r *Reader) ws() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// peek returns the next byte after whitespace; 0 at the end of input (a
// NUL byte in the input reads as 1, which no JSON token starts with).
func (r *Reader) peek() byte {
	r.ws()
	if r.i >= len(r.b) {
		return 0
	}
	if c := r.b[r.i]; c != 0 {
		return c
	}
	return 1
}

// KindAt names the JSON type of the value at the cursor, for messages.
func (r *Reader) KindAt() string {
	switch r.peek() {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	case 0:
		return "nothing"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "number"
	}
	return "invalid"
}

func (r *Reader) literal(lit string) bool {
	if len(r.b)-r.i >= len(lit) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// null consumes a null, reporting whether there was one.
func (r *Reader) null() bool {
	r.ws()
	return r.literal("null")
}

// IsNull is null for the generated decoders' pointer, time and struct
// fields. (Not inlined: a copy in each cost 3 KB of gzipped module.)
//
//go:noinline
func (r *Reader) IsNull() bool { return r.null() }

// DecodeObject reads a whole object of a request, calling field for each
// member; field must read the member's value. A member given twice is
// refused: encoding/json would merge the two in ways nobody means. (An
// answer's is taken, as encoding/json takes it.)
func DecodeObject(r *Reader, field func(key string) error) error {
	return members(r, !r.answer, field)
}

// members reads an object; unique refuses a repeated member name (raw
// values, which Stile only stores, keep whatever JSON allows).
func members(r *Reader, unique bool, field func(key string) error) error {
	var buf [16]string
	seen := buf[:0]
	if r.peek() != '{' {
		if k := r.KindAt(); k == "nothing" || k == "invalid" {
			return r.fail("expected a JSON object")
		}
		return &DecodeError{Msg: "expected a JSON object, got " + r.KindAt()}
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.fail("expected a field name")
		}
		key, err := r.Str()
		if err != nil {
			return err
		}
		if r.peek() != ':' {
			return r.fail("expected ':' after field %q", key)
		}
		r.i++
		if unique {
			for _, k := range seen {
				if k == key {
					return &DecodeError{Msg: printf.Sprintf("field %q appears twice: send each field once", key)}
				}
			}
			seen = append(seen, key)
		}
		if err := field(key); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return nil
		default:
			return r.fail("expected ',' or '}' after field %q", key)
		}
	}
}

func DecodeArray(r *Reader, elem func(i int) error) error {
	if r.peek() != '[' {
		return &DecodeError{Msg: "expected a JSON array, got " + r.KindAt()}
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for n := 0; ; n++ {
		if err := elem(n); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.fail("expected ',' or ']' in an array")
		}
	}
}

func UnknownField(key string) error {
	return &DecodeError{Msg: printf.Sprintf("unknown field %q (see docs/API.md for the fields of this request)", key)}
}

// Unknown is what the generated decoders do with a member they have no
// field for: a request's is refused (UnknownField), an answer's value
// skipped. (Not inlined: the generated decoders call it in many places.)
//
//go:noinline
func (r *Reader) Unknown(key string) error {
	if r.answer {
		return r.skip(0)
	}
	return UnknownField(key)
}

func TypeError(r *Reader, key, want string) error {
	switch k := r.KindAt(); k {
	case "nothing":
		return r.fail("the body ends too early")
	case "invalid":
		return r.fail("invalid value for field %q", key)
	default:
		return &DecodeError{Msg: printf.Sprintf("field %q must be %s, not %s", key, want, k)}
	}
}

// Str reads a JSON string.
func (r *Reader) Str() (string, error) {
	if r.peek() != '"' {
		return "", r.fail("expected a string")
	}
	r.i++
	start := r.i
	// Fast path: no escapes.
	for r.i < len(r.b) {
		c := r.b[r.i]
		if c == '"' {
			s := r.b[start:r.i]
			r.i++
			if !utf8.Valid(s) {
				return string([]rune(string(s))), nil // invalid bytes become U+FFFD, as encoding/json does
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", r.fail("control character in a string")
		}
		r.i++
	}
	out := append([]byte(nil), r.b[start:r.i]...)
	for r.i < len(r.b) {
		c := r.b[r.i]
		switch {
		case c == '"':
			r.i++
			if !utf8.Valid(out) {
				return string([]rune(string(out))), nil
			}
			return string(out), nil
		case c < 0x20:
			return "", r.fail("control character in a string")
		case c != '\\':
			out = append(out, c)
			r.i++
			continue
		}
		r.i++
		if r.i >= len(r.b) {
			break
		}
		e := r.b[r.i]
		r.i++
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			rn, ok := r.hex4()
			if !ok {
				return "", r.fail("bad \\u escape")
			}
			if utf16.IsSurrogate(rn) {
				save := r.i
				if r.literal(`\u`) {
					if rn2, ok := r.hex4(); ok {
						if dec := utf16.DecodeRune(rn, rn2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							continue
						}
					}
				}
				r.i = save
				rn = utf8.RuneError
			}
			out = utf8.AppendRune(out, rn)
		default:
			return "", r.fail("bad escape %q", "\\"+string(rune(e)))
		}
	}
	return "", r.fail("unterminated string")
}

func (r *Reader) hex4() (rune, bool) {
	if len(r.b)-r.i < 4 {
		return 0, false
	}
	var n rune
	for _, c := range r.b[r.i : r.i+4] {
		switch {
		case c >= '0' && c <= '9':
			n = n<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			n = n<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			n = n<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	r.i += 4
	return n, true
}

// Number reads a JSON number's text.
func (r *Reader) Number() ([]byte, error) {
	r.ws()
	start := r.i
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i < len(r.b) && r.b[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		return nil, r.fail("expected a number")
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return nil, r.fail("expected digits after '.'")
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return nil, r.fail("expected digits in an exponent")
		}
	}
	return r.b[start:r.i], nil
}

// Integer reads a JSON number into an int64, refusing fractions.
func (r *Reader) Integer(key string) (int64, error) {
	if r.null() {
		return 0, nil
	}
	if k := r.KindAt(); k != "number" {
		return 0, TypeError(r, key, "a number")
	}
	text, err := r.Number()
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return 0, &DecodeError{Msg: printf.Sprintf("field %q must be a whole number, not %s", key, text)}
	}
	return n, nil
}

func (r *Reader) BoolField(key string) (bool, error) {
	if r.null() {
		return false, nil
	}
	switch {
	case r.peek() == 't' && r.literal("true"):
		return true, nil
	case r.peek() == 'f' && r.literal("false"):
		return false, nil
	}
	return false, TypeError(r, key, "true or false")
}

func (r *Reader) StringField(key string) (string, error) {
	if r.null() {
		return "", nil // as encoding/json: null leaves the zero value
	}
	if r.KindAt() != "string" {
		return "", TypeError(r, key, "a string")
	}
	return r.Str()
}

// Raw reads any JSON value and returns its text (null stays the value
// null, as in encoding/json; an absent field stays nil).
func (r *Reader) Raw() ([]byte, error) {
	start := r.i
	if err := r.skip(0); err != nil {
		return nil, err
	}
	return r.b[start:r.i], nil
}

// skip reads one value, checking it is well formed.
func (r *Reader) skip(depth int) error {
	if depth > 1000 {
		return r.fail("nested too deeply")
	}
	switch r.peek() {
	case '{':
		return members(r, false, func(string) error { return r.skip(depth + 1) })
	case '[':
		return DecodeArray(r, func(int) error { return r.skip(depth + 1) })
	case '"':
		_, err := r.Str()
		return err
	case 't':
		if r.literal("true") {
			return nil
		}
	case 'f':
		if r.literal("false") {
			return nil
		}
	case 'n':
		if r.literal("null") {
			return nil
		}
	case 0:
		return r.fail("the body ends too early")
	default:
		_, err := r.Number()
		return err
	}
	return r.fail("invalid value")
}

// DecodeBody decodes a whole request body with obj, refusing trailing data.
func DecodeBody(b []byte, obj func(r *Reader) error) error {
	r := Reader{b: b}
	err := r.Open()
	if err != nil {
		return err
	}
	return r.CloseBody(obj(&r))
}

// Open starts reading a whole request body, refusing an empty one. The
// generated decoders declare the Reader, Open it, decode, then CloseBody:
// the Reader and the value they decode into stay on the stack (behind an
// interface or a func value passed down, they would not), and no method
// value needs a wrapper. (Not inlined, nor is closeBody: a copy in each
// decoder cost 2 KB of gzipped module.)
//
//go:noinline
func (r *Reader) Open() error {
	if r.peek() == 0 {
		if r.answer {
			return &DecodeError{Msg: "the answer is empty: expected a JSON object"}
		}
		return &DecodeError{Msg: "the request body is empty: send a JSON object"}
	}
	return nil
}

// CloseBody ends a body that decoding left at err, refusing trailing data.
//
//go:noinline
func (r *Reader) CloseBody(err error) error {
	if err != nil {
		return err
	}
	if r.peek() != 0 {
		return r.fail("unexpected data after the JSON object")
	}
	return nil
}

// TimeField reads an RFC 3339 time. Callers handle null first (a no-op,
// as in encoding/json).
func TimeField(r *Reader, key string) (time.Time, error) {
	s, err := r.StringField(key)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := ParseTime(s)
	if !ok {
		return time.Time{}, &DecodeError{Msg: printf.Sprintf("field %q is not an RFC 3339 time (e.g. 2026-11-30T12:00:00Z): %q", key, s)}
	}
	return t, nil
}

// ParseTime parses an RFC 3339 time, YYYY-MM-DDTHH:MM:SS[.fraction] then
// Z or ±HH:MM, strictly: what it accepts, time.Time's UnmarshalJSON reads
// as the same instant. (Written here because time.Parse's layout engine
// adds 10 KB of gzipped Wasm to every module.)
func ParseTime(s string) (time.Time, bool) {
	num := func(i, n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	sep := func(i int, c byte) bool { return i < len(s) && s[i] == c }
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 2)
	d, ok3 := num(8, 2)
	h, ok4 := num(11, 2)
	mi, ok5 := num(14, 2)
	sec, ok6 := num(17, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && sep(4, '-') && sep(7, '-') && sep(10, 'T') && sep(13, ':') && sep(16, ':')) {
		return time.Time{}, false
	}
	if mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	i, nsec := 19, 0
	if sep(i, '.') {
		i++
		digits := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if digits < 9 {
				nsec = nsec*10 + int(s[i]-'0')
			}
			digits++
			i++
		}
		if digits == 0 {
			return time.Time{}, false
		}
		digits = min(digits, 9)
		for ; digits < 9; digits++ {
			nsec *= 10
		}
	}
	offset := 0
	switch {
	case sep(i, 'Z') && i+1 == len(s):
	case (sep(i, '+') || sep(i, '-')) && i+6 == len(s) && sep(i+3, ':'):
		oh, ok1 := num(i+1, 2)
		om, ok2 := num(i+4, 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, false
		}
		offset = (oh*60 + om) * 60
		if s[i] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, false
	}
	loc := time.UTC
	if offset != 0 || s[i] != 'Z' {
		loc = time.FixedZone("", offset)
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, nsec, loc)
	if t.Day() != d { // February 30th and the like
		return time.Time{}, false
	}
	return t, true
}

// ObjectArray reads an array of objects: null reads as no array; else
// start runs (it sets an empty slice) and elem decodes each element. (Not
// generic: a generic version cost 1.2 KB of gzipped module.)
func ObjectArray(r *Reader, key string, start func(), elem func() error) error {
	if r.null() {
		return nil
	}
	if r.KindAt() != "array" {
		return TypeError(r, key, "an array of objects")
	}
	start()
	return DecodeArray(r, func(int) error {
		if r.KindAt() != "object" {
			return TypeError(r, key, "an array of objects")
		}
		return elem()
	})
}

func StringArray(r *Reader, key string) ([]string, error) {
	if r.null() {
		return nil, nil
	}
	if r.KindAt() != "array" {
		return nil, TypeError(r, key, "an array of strings")
	}
	out := []string{}
	err := DecodeArray(r, func(int) error {
		s, err := r.StringField(key)
		out = append(out, s)
		return err
	})
	return out, err
}

// RawArray reads an array of JSON values into *dst (null leaves it nil),
// each kept as its own JSON (T is json.RawMessage, whose package this one
// leaves out).
func RawArray[T ~[]byte](r *Reader, key string, dst *[]T) error {
	if r.null() {
		return nil
	}
	if r.KindAt() != "array" {
		return TypeError(r, key, "an array")
	}
	out := []T{}
	err := DecodeArray(r, func(int) error {
		v, err := r.Raw()
		out = append(out, v)
		return err
	})
	*dst = out
	return err
}

// DecodeStrings decodes a JSON array of strings (null gives nil).
func DecodeStrings(b []byte) ([]string, error) {
	var out []string
	err := DecodeBody(b, func(r *Reader) error {
		var err error
		out, err = StringArray(r, "array")
		return err
	})
	return out, err
}

// Valid reports whether b holds exactly one well-formed JSON value,
// with space around it allowed.
func Valid(b []byte) bool {
	r := &Reader{b: b}
	if r.peek() == 0 {
		return false
	}
	return r.skip(0) == nil && r.peek() == 0
}
