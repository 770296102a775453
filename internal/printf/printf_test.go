package printf_test

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stile-run/stile/internal/printf"
	"github.com/stretchr/testify/require"
)

type stringer struct{ s string }

func (s stringer) String() string { return "S<" + s.s + ">" }

type ptrStringer struct{ s string }

func (s *ptrStringer) String() string { return "P<" + s.s + ">" }

type panicky int

func (panicky) String() string { panic("boom") }

type errPanicky struct{}

func (errPanicky) Error() string { panic(errors.New("deeper")) }

type myErr struct{ code int }

func (e *myErr) Error() string { return fmt.Sprint("my error ", e.code) }

type named string

type point struct{ X, Y int }

// cases are the verbs and argument types the Stile packages use (the
// guard test keeps them to these), and the edges around them.
func cases() []struct {
	format string
	args   []any
} {
	err := errors.New("boom")
	wrapped := fmt.Errorf("outer: %w", err)
	var nilPtr *ptrStringer
	var nilErr *myErr
	return []struct {
		format string
		args   []any
	}{
		{"plain", nil},
		{"", nil},
		{"100%% sure %s", []any{"x"}},
		{"%s", []any{"a string"}},
		{"%s|%s|%s", []any{"", "ünïcødé", "\x00\xff invalid"}},
		{"%s", []any{[]byte("bytes\xff")}},
		{"%s %v %q", []any{err, wrapped, err}},
		{"%s %v %q", []any{stringer{"a"}, stringer{"b"}, stringer{"c\n"}}},
		{"%s %v", []any{&ptrStringer{"p"}, &ptrStringer{"q"}}},
		{"%s %v", []any{time.Duration(0), 1500 * time.Millisecond}},
		{"%s", []any{-90 * time.Minute}},
		{"%v", []any{time.Date(2024, 2, 29, 13, 4, 5, 6, time.UTC)}},
		{"%d %d %d %d %d", []any{0, -1, math.MaxInt64, math.MinInt64, int64(42)}},
		{"%d %d %d %d", []any{uint64(math.MaxUint64), byte(255), uint(7), uint32(9)}},
		{"%d %d %d", []any{int8(-8), int16(-16), int32(-32)}},
		{"%v %v %v", []any{12, uint8(3), int64(-5)}},
		{"%q", []any{"quote \"me\"\n\t\\ ☺ \x7f \xfe"}},
		{"%q %q", []any{[]byte("b\"q"), 'x'}},
		{"%q %q %q", []any{65, -1, 0x110000}},
		{"%c%c%c%c", []any{byte('a'), byte(0xe9), 0x263a, -5}},
		{"%c", []any{uint64(math.MaxUint64)}},
		{"%t %t %v", []any{true, false, true}},
		{"%v", []any{[]string{"a", "b c", ""}}},
		{"%v %s %q", []any{[]string{}, []string{"x"}, []string{"y", "z"}}},
		{"%v", []any{[]byte{1, 2, 255}}},
		{"%v %v %v", []any{1.5, float32(0.1), 1e21}},
		{"%v %v %v %v", []any{math.Inf(1), math.Inf(-1), math.NaN(), math.Copysign(0, -1)}},
		{"%v %v", []any{nil, error(nil)}},
		{"%T %T %T %T %T", []any{"s", 1, err, wrapped, nilErr}},
		{"%T %T %T %T", []any{point{}, &point{}, []point{}, map[string][]int{}}},
		{"%T %T %T %T", []any{named("n"), time.Second, time.Time{}, fs.ErrNotExist}},
		{"%T %T %T", []any{func(int) error { return nil }, make(chan<- string), struct{ A int }{}}},
		{"%T %T", []any{[3]*int{}, any(nil)}},
		{"%s %v", []any{nilPtr, nilErr}},
		{"%v|%s", []any{panicky(1), errPanicky{}}},
		// What the verbs do with arguments they do not take:
		{"%d", []any{"str"}},
		{"%s", []any{12}},
		{"%t", []any{1}},
		{"%d", []any{true}},
		{"%s %d", []any{nil, nil}},
		{"%w", []any{"not an error"}},
		{"%d %s", []any{1}},
		{"%d", []any{1, "extra", nil, 2.5}},
		{"trailing %", nil},
		{"%☺", []any{1}},
	}
}

func TestSprintfMatchesFmt(t *testing.T) {
	for _, c := range cases() {
		require.Equal(t, fmt.Sprintf(c.format, c.args...), printf.Sprintf(c.format, c.args...), "format %q", c.format)
	}
}

func TestErrorfMatchesFmt(t *testing.T) {
	for _, c := range cases() {
		want, got := fmt.Errorf(c.format, c.args...), printf.Errorf(c.format, c.args...)
		require.Equal(t, want.Error(), got.Error(), "format %q", c.format)
		require.Equal(t, errors.Unwrap(want) == nil, errors.Unwrap(got) == nil, "format %q", c.format)
	}
}

func TestErrorfWraps(t *testing.T) {
	base := &myErr{code: 7}
	sentinel := errors.New("sentinel")

	one := printf.Errorf("%w: at %d", sentinel, 3)
	require.Equal(t, "sentinel: at 3", one.Error())
	require.ErrorIs(t, one, sentinel)
	require.Equal(t, sentinel, errors.Unwrap(one))

	two := printf.Errorf("%w: %q: %w", sentinel, "x", base)
	require.Equal(t, fmt.Errorf("%w: %q: %w", sentinel, "x", base).Error(), two.Error())
	require.ErrorIs(t, two, sentinel)
	require.ErrorIs(t, two, base)
	var as *myErr
	require.ErrorAs(t, two, &as)
	require.Equal(t, 7, as.code)
	require.Nil(t, errors.Unwrap(two), "several %w unwrap as []error, as in fmt")

	deep := printf.Errorf("outer: %w", printf.Errorf("middle: %w", base))
	require.ErrorIs(t, deep, base)
	require.Equal(t, "outer: middle: my error 7", deep.Error())

	none := printf.Errorf("no wrap: %v", sentinel)
	require.NotErrorIs(t, none, sentinel)
	require.Nil(t, errors.Unwrap(none))

	// a %w whose argument is not an error wraps nothing, as in fmt
	bad := printf.Errorf("%w", "text")
	require.Equal(t, "%!w(string=text)", bad.Error())
	require.Nil(t, errors.Unwrap(bad))
	mixed := printf.Errorf("%w %w", "text", sentinel)
	require.ErrorIs(t, mixed, sentinel)
	require.Len(t, mixed.(interface{ Unwrap() []error }).Unwrap(), 1)
}

// TestUnsupportedIsVisible: what fmt would print by reflection shows as
// a bad verb with "?" for the value, never as a plausible message.
func TestUnsupportedIsVisible(t *testing.T) {
	for _, c := range []struct {
		want   string
		format string
		args   []any
	}{
		{"%!v(printf_test.point=?)", "%v", []any{point{1, 2}}},
		{"%!s(printf_test.named=?)", "%s", []any{named("n")}},
		{"%!d(time.Duration=?)", "%d", []any{time.Second}},
		{"%!v(map[string]int=?)", "%v", []any{map[string]int{"a": 1}}},
		{"%!w(*errors.errorString=?)", "%w", []any{errors.New("e")}}, // Sprintf does not wrap
		{"%!x(int=17)", "%x", []any{17}},
		{"%!.(int=3)3s", "%.3s", []any{3}}, // no flags, width or precision
		{"%!-(int=1)5d", "%-5d", []any{1}},
	} {
		require.Equal(t, c.want, printf.Sprintf(c.format, c.args...), "format %q", c.format)
	}
}

// FuzzMatchesFmt compares the two on random text around every verb the
// Stile packages use.
func FuzzMatchesFmt(f *testing.F) {
	f.Add("job %q", "hello", int64(-3), uint64(7), byte('a'))
	f.Add("", "\xff\x00\"", int64(math.MinInt64), uint64(math.MaxUint64), byte(0xe9))
	f.Add("☺ 100%", "tab\there", int64(0), uint64(0), byte(0))
	f.Fuzz(func(t *testing.T, lit, s string, i int64, u uint64, b byte) {
		lit = strings.ReplaceAll(lit, "%", "%%")
		e := errors.New(s)
		for _, c := range []struct {
			format string
			args   []any
		}{
			{lit + "%s" + lit, []any{s}},
			{"%q" + lit + "%d", []any{s, i}},
			{"%d %d %d %d", []any{i, u, b, int(i)}},
			{"%c %c %c %q", []any{b, int(i), u, int(i)}},
			{"%v: %s %v %T", []any{e, time.Duration(i), []string{s, lit}, s}},
			{"%s %q", []any{[]byte(s), stringer{s}}},
		} {
			require.Equal(t, fmt.Sprintf(c.format, c.args...), printf.Sprintf(c.format, c.args...))
		}
		want, got := fmt.Errorf(lit+"%w: %q", e, s), printf.Errorf(lit+"%w: %q", e, s)
		require.Equal(t, want.Error(), got.Error())
		require.ErrorIs(t, got, e)
	})
}
