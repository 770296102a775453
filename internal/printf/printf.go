// Package printf formats the messages and errors of the packages compiled
// into the tenant module, in place of package fmt: linking fmt (and the
// reflect and internal/fmtsort it pulls in) made every tenant module
// about 85 KB bigger gzipped, for error messages.
//
// Sprintf and Errorf print exactly what fmt's would, byte for byte, for
// the verbs %s %d %q %v %w %T %c %t and %% without flags, width or
// precision, and for arguments of the types string, []byte, []string,
// bool, the integer and float types, and any type implementing error or
// String() string (called as fmt calls them, for %s %q %v and %w). What
// falls outside shows in the text instead of being mimicked: an
// unsupported verb or flag is rendered as fmt renders a bad verb,
// "%!z(int=1)", and an argument of another type (a struct, a map, a
// named string or integer without a String method: convert it with
// string(x) or int64(x)) as "%!v(T=?)". The test in this package checks
// every call in the repository's Stile packages against that list, and
// compares the output with fmt's.
package printf

import (
	"errors"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Sprintf formats as fmt.Sprintf does.
func Sprintf(format string, args ...any) string {
	p := printer{buf: make([]byte, 0, len(format)+8*len(args))}
	p.printf(format, args)
	return string(p.buf)
}

// Errorf formats as fmt.Errorf does: the error wraps the arguments of its
// %w verbs, which errors.Is and errors.As see through (Unwrap() error for
// one %w, Unwrap() []error for several).
func Errorf(format string, args ...any) error {
	p := printer{buf: make([]byte, 0, len(format)+8*len(args)), wrap: true}
	p.printf(format, args)
	s := string(p.buf)
	switch len(p.wrapped) {
	case 0:
		return errors.New(s)
	case 1:
		w := &wrapError{msg: s}
		w.err, _ = args[p.wrapped[0]].(error)
		return w
	}
	var errs []error
	for _, i := range p.wrapped { // in increasing order: the verbs take the arguments in turn
		if e, ok := args[i].(error); ok {
			errs = append(errs, e)
		}
	}
	return &wrapErrors{msg: s, errs: errs}
}

type wrapError struct {
	msg string
	err error
}

func (e *wrapError) Error() string { return e.msg }
func (e *wrapError) Unwrap() error { return e.err }

type wrapErrors struct {
	msg  string
	errs []error
}

func (e *wrapErrors) Error() string   { return e.msg }
func (e *wrapErrors) Unwrap() []error { return e.errs }

type printer struct {
	buf     []byte
	wrap    bool  // Errorf: %w is valid
	wrapped []int // the arguments of the %w verbs

	erroring bool // printing a bad verb's value
}

func (p *printer) printf(format string, args []any) {
	n := 0
	for i := 0; i < len(format); {
		c := format[i]
		if c != '%' {
			j := i + 1
			for j < len(format) && format[j] != '%' {
				j++
			}
			p.buf = append(p.buf, format[i:j]...)
			i = j
			continue
		}
		i++
		if i == len(format) {
			p.buf = append(p.buf, "%!(NOVERB)"...)
			break
		}
		verb, size := rune(format[i]), 1
		if verb >= utf8.RuneSelf {
			verb, size = utf8.DecodeRuneInString(format[i:])
		}
		i += size
		switch {
		case verb == '%':
			p.buf = append(p.buf, '%')
		case n >= len(args):
			p.bang(verb)
			p.buf = append(p.buf, "(MISSING)"...)
		default:
			if verb == 'w' {
				p.wrapped = append(p.wrapped, n)
			}
			p.arg(args[n], verb)
			n++
		}
	}
	if n < len(args) {
		p.buf = append(p.buf, "%!(EXTRA "...)
		for i, a := range args[n:] {
			if i > 0 {
				p.buf = append(p.buf, ", "...)
			}
			if a == nil {
				p.buf = append(p.buf, "<nil>"...)
			} else {
				p.buf = append(p.buf, TypeName(a)...)
				p.buf = append(p.buf, '=')
				p.arg(a, 'v')
			}
		}
		p.buf = append(p.buf, ')')
	}
}

// arg prints one argument as fmt's printArg does.
func (p *printer) arg(a any, verb rune) {
	if a == nil {
		if verb == 'v' || verb == 'T' {
			p.buf = append(p.buf, "<nil>"...)
		} else {
			p.bad(a, verb)
		}
		return
	}
	if verb == 'T' {
		p.buf = append(p.buf, TypeName(a)...)
		return
	}
	var u uint64 // an integer's bits
	signed := true
	switch v := a.(type) {
	case string:
		p.str(v, verb, a)
		return
	case []byte:
		p.bytes(v, verb)
		return
	case bool:
		if verb == 't' || verb == 'v' {
			p.buf = strconv.AppendBool(p.buf, v)
		} else {
			p.bad(a, verb)
		}
		return
	case float32:
		p.float(float64(v), 32, verb, a)
		return
	case float64:
		p.float(v, 64, verb, a)
		return
	case int:
		u = uint64(v)
	case int8:
		u = uint64(v)
	case int16:
		u = uint64(v)
	case int32:
		u = uint64(v)
	case int64:
		u = uint64(v)
	case uint:
		u, signed = uint64(v), false
	case uint8:
		u, signed = uint64(v), false
	case uint16:
		u, signed = uint64(v), false
	case uint32:
		u, signed = uint64(v), false
	case uint64:
		u, signed = v, false
	case uintptr:
		u, signed = uint64(v), false
	default:
		p.other(a, verb)
		return
	}
	switch verb {
	case 'd', 'v':
		if signed {
			p.buf = strconv.AppendInt(p.buf, int64(u), 10)
		} else {
			p.buf = strconv.AppendUint(p.buf, u, 10)
		}
	case 'c', 'q': // the character of that code point, U+FFFD beyond Unicode
		r := utf8.RuneError
		if u <= utf8.MaxRune {
			r = rune(u)
		}
		if verb == 'c' {
			p.buf = utf8.AppendRune(p.buf, r)
		} else {
			p.buf = strconv.AppendQuoteRune(p.buf, r)
		}
	default:
		p.bad(a, verb)
	}
}

// other prints what is not a basic type: an error or a Stringer for the
// verbs that take a string, a []string; anything else is shown as bad.
func (p *printer) other(a any, verb rune) {
	if p.erroring { // printing a bad verb's value: fmt would print it by reflection
		p.buf = append(p.buf, '?')
		return
	}
	if verb == 'w' {
		if _, ok := a.(error); !ok || !p.wrap {
			p.bad(a, verb)
			return
		}
		verb = 'v'
	}
	if verb == 'v' || verb == 's' || verb == 'q' {
		switch v := a.(type) {
		case error:
			p.call(a, verb, "Error", v.Error)
			return
		case interface{ String() string }:
			p.call(a, verb, "String", v.String)
			return
		case []string:
			p.buf = append(p.buf, '[')
			for i, s := range v {
				if i > 0 {
					p.buf = append(p.buf, ' ')
				}
				p.str(s, verb, s)
			}
			p.buf = append(p.buf, ']')
			return
		}
	}
	p.bad(a, verb)
}

// call prints what an Error or String method returns, and a panic in it
// as fmt does.
func (p *printer) call(a any, verb rune, method string, f func() string) {
	defer func() {
		if r := recover(); r != nil {
			if isNilPointer(a) {
				p.buf = append(p.buf, "<nil>"...)
				return
			}
			p.bang(verb)
			p.buf = append(append(append(p.buf, "(PANIC="...), method...), " method: "...)
			p.arg(r, 'v')
			p.buf = append(p.buf, ')')
		}
	}()
	p.str(f(), verb, a)
}

// isNilPointer reports whether a holds a nil pointer: its interface's
// data word is nil and its type's name starts with '*'.
func isNilPointer(a any) bool {
	words := (*[2]unsafe.Pointer)(unsafe.Pointer(&a))
	if words[1] != nil {
		return false
	}
	name := TypeName(a)
	return len(name) > 0 && name[0] == '*'
}

func (p *printer) str(s string, verb rune, a any) {
	switch verb {
	case 's', 'v':
		p.buf = append(p.buf, s...)
	case 'q':
		p.buf = strconv.AppendQuote(p.buf, s)
	default:
		p.bad(a, verb)
	}
}

func (p *printer) bytes(b []byte, verb rune) {
	if verb != 'v' && verb != 'd' {
		p.str(string(b), verb, b)
		return
	}
	p.buf = append(p.buf, '[')
	for i, c := range b {
		if i > 0 {
			p.buf = append(p.buf, ' ')
		}
		p.buf = strconv.AppendUint(p.buf, uint64(c), 10)
	}
	p.buf = append(p.buf, ']')
}

func (p *printer) float(f float64, size int, verb rune, a any) {
	if verb != 'v' {
		p.bad(a, verb)
		return
	}
	p.buf = strconv.AppendFloat(p.buf, f, 'g', -1, size)
}

func (p *printer) bang(verb rune) {
	p.buf = utf8.AppendRune(append(p.buf, "%!"...), verb)
}

// bad prints a verb that does not fit its argument, as fmt does:
// %!verb(type=value), the value printed as %v if its type is one of the
// basic types above, else as "?" (fmt would print it by reflection).
func (p *printer) bad(a any, verb rune) {
	p.bang(verb)
	if a == nil {
		p.buf = append(p.buf, "(<nil>)"...)
		return
	}
	p.buf = append(append(append(p.buf, '('), TypeName(a)...), '=')
	p.erroring = true
	p.arg(a, 'v')
	p.erroring = false
	p.buf = append(p.buf, ')')
}

// never is the type TypeName asserts to, which no argument has.
type never struct{}

const (
	assertPrefix = "interface conversion: interface {} is "
	assertSuffix = ", not printf.never"
)

// TypeName returns the name of a's dynamic type as %T prints it
// (reflect.TypeOf(a).String()), without linking package reflect: it takes
// the name from the runtime's error for a failed type assertion, which
// names both types with the same string.
func TypeName(a any) (name string) {
	if a == nil {
		return "<nil>"
	}
	if _, ok := a.(never); ok {
		return "printf.never"
	}
	defer func() {
		e, _ := recover().(error)
		if e == nil {
			name = "?"
			return
		}
		s := e.Error()
		if len(s) < len(assertPrefix)+len(assertSuffix) || s[:len(assertPrefix)] != assertPrefix || s[len(s)-len(assertSuffix):] != assertSuffix {
			name = "?"
			return
		}
		name = s[len(assertPrefix) : len(s)-len(assertSuffix)]
	}()
	_ = a.(never) // panics, with a's type in the message
	return "?"
}
