package do

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/stile-run/stile/internal/printf"
)

// The value codec carries SQL parameters from the guest to the host and rows
// back. It is compact and binary because every statement crosses it (a JSON
// codec measured 1.6 times slower end to end).
//
//	params  = uvarint(count) value*
//	rowset  = uvarint(ncols) uvarint(nrows) value{ncols*nrows}   (row-major)
//	value   = tag payload
//	  TagNull  0x00  (no payload)
//	  TagInt   0x01  zigzag varint; must lie within ±(2^53-1)
//	  TagFloat 0x02  8 bytes, IEEE 754 little endian
//	  TagText  0x03  uvarint(len) UTF-8 bytes
//	  TagBlob  0x04  uvarint(len) bytes
//
// The JS shim implements the same codec; testdata/vectors.json pins both.

// Kind is the type tag of an encoded value.
type Kind byte

// Value kinds.
const (
	KindNull  Kind = 0
	KindInt   Kind = 1
	KindFloat Kind = 2
	KindText  Kind = 3
	KindBlob  Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindNull:
		return "null"
	case KindInt:
		return "integer"
	case KindFloat:
		return "real"
	case KindText:
		return "text"
	case KindBlob:
		return "blob"
	}
	return printf.Sprintf("kind(%d)", byte(k))
}

// Value is one decoded SQL value. For text and blob, Bytes aliases the buffer
// it was decoded from.
type Value struct {
	Kind  Kind
	Int   int64
	Float float64
	Bytes []byte
}

// ErrCodec reports a malformed or out-of-range encoding.
var ErrCodec = errors.New("value codec")

// AppendValue appends one encoded value. It rejects integers outside
// ±(2^53-1) and values longer than MaxValueBytes, which Durable Object
// SQLite cannot store faithfully.
func AppendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, byte(KindNull)), nil
	case int:
		return appendInt(b, int64(x))
	case int64:
		return appendInt(b, x)
	case int32:
		return appendInt(b, int64(x))
	case uint32:
		return appendInt(b, int64(x))
	case bool:
		if x {
			return appendInt(b, 1)
		}
		return appendInt(b, 0)
	case float64:
		b = append(b, byte(KindFloat))
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(x)), nil
	case string:
		if len(x) > MaxValueBytes {
			return b, printf.Errorf("%w: text of %d bytes exceeds %d", ErrCodec, len(x), MaxValueBytes)
		}
		b = append(b, byte(KindText))
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...), nil
	case []byte:
		if x == nil {
			return append(b, byte(KindNull)), nil
		}
		if len(x) > MaxValueBytes {
			return b, printf.Errorf("%w: blob of %d bytes exceeds %d", ErrCodec, len(x), MaxValueBytes)
		}
		b = append(b, byte(KindBlob))
		b = binary.AppendUvarint(b, uint64(len(x)))
		return append(b, x...), nil
	case Value:
		return appendRaw(b, x)
	}
	return b, printf.Errorf("%w: cannot encode %T", ErrCodec, v)
}

func appendInt(b []byte, i int64) ([]byte, error) {
	if i > MaxSafeInteger || i < MinSafeInteger {
		return b, printf.Errorf("%w: integer %d is outside ±(2^53-1)", ErrCodec, i)
	}
	b = append(b, byte(KindInt))
	return binary.AppendVarint(b, i), nil
}

func appendRaw(b []byte, v Value) ([]byte, error) {
	switch v.Kind {
	case KindNull:
		return AppendValue(b, nil)
	case KindInt:
		return AppendValue(b, v.Int)
	case KindFloat:
		return AppendValue(b, v.Float)
	case KindText:
		if len(v.Bytes) > MaxValueBytes {
			return b, printf.Errorf("%w: text of %d bytes exceeds %d", ErrCodec, len(v.Bytes), MaxValueBytes)
		}
		b = append(b, byte(KindText))
		b = binary.AppendUvarint(b, uint64(len(v.Bytes)))
		return append(b, v.Bytes...), nil
	case KindBlob:
		return AppendValue(b, v.Bytes)
	}
	return b, printf.Errorf("%w: unknown kind %d", ErrCodec, byte(v.Kind))
}

// EncodeParams appends an encoded parameter list.
func EncodeParams(b []byte, args ...any) ([]byte, error) {
	if len(args) > MaxBoundParams {
		// The host would refuse it too; failing here names the call site.
		return b, printf.Errorf("%w: %d parameters exceed %d", ErrCodec, len(args), MaxBoundParams)
	}
	b = binary.AppendUvarint(b, uint64(len(args)))
	var err error
	for i, a := range args {
		if b, err = AppendValue(b, a); err != nil {
			return b, printf.Errorf("parameter %d: %w", i+1, err)
		}
	}
	return b, nil
}

// Decoder reads encoded values from a buffer.
type Decoder struct {
	buf []byte
	off int
}

// NewDecoder returns a decoder over b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// Uvarint reads one unsigned varint.
func (d *Decoder) Uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.buf[d.off:])
	if n <= 0 {
		return 0, printf.Errorf("%w: bad uvarint at offset %d", ErrCodec, d.off)
	}
	d.off += n
	return v, nil
}

// Done reports whether the whole buffer was consumed.
func (d *Decoder) Done() bool { return d.off == len(d.buf) }

// Value reads one value.
func (d *Decoder) Value() (Value, error) {
	if d.off >= len(d.buf) {
		return Value{}, printf.Errorf("%w: truncated value at offset %d", ErrCodec, d.off)
	}
	k := Kind(d.buf[d.off])
	d.off++
	switch k {
	case KindNull:
		return Value{Kind: KindNull}, nil
	case KindInt:
		i, n := binary.Varint(d.buf[d.off:])
		if n <= 0 {
			return Value{}, printf.Errorf("%w: bad integer at offset %d", ErrCodec, d.off)
		}
		d.off += n
		if i > MaxSafeInteger || i < MinSafeInteger {
			return Value{}, printf.Errorf("%w: integer %d is outside ±(2^53-1)", ErrCodec, i)
		}
		return Value{Kind: KindInt, Int: i}, nil
	case KindFloat:
		if len(d.buf)-d.off < 8 {
			return Value{}, printf.Errorf("%w: truncated real at offset %d", ErrCodec, d.off)
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.buf[d.off:]))
		d.off += 8
		return Value{Kind: KindFloat, Float: f}, nil
	case KindText, KindBlob:
		n, err := d.Uvarint()
		if err != nil {
			return Value{}, err
		}
		if n > uint64(len(d.buf)-d.off) {
			return Value{}, printf.Errorf("%w: %s of %d bytes overruns the buffer", ErrCodec, k, n)
		}
		v := Value{Kind: k, Bytes: d.buf[d.off : d.off+int(n) : d.off+int(n)]}
		d.off += int(n)
		return v, nil
	}
	return Value{}, printf.Errorf("%w: unknown tag %d at offset %d", ErrCodec, byte(k), d.off-1)
}

// DecodeParams decodes a whole parameter list.
func DecodeParams(b []byte) ([]Value, error) {
	d := NewDecoder(b)
	n, err := d.Uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(b)) {
		// Each value takes at least one byte. (More than MaxBoundParams
		// still decodes, so the host reports the database's own message.)
		return nil, printf.Errorf("%w: %d parameters in %d bytes", ErrCodec, n, len(b))
	}
	vals := make([]Value, n)
	for i := range vals {
		if vals[i], err = d.Value(); err != nil {
			return nil, err
		}
	}
	if !d.Done() {
		return nil, printf.Errorf("%w: %d trailing bytes after parameters", ErrCodec, len(b)-d.off)
	}
	return vals, nil
}

// RowSetWriter encodes a row set on the host side.
type RowSetWriter struct {
	buf   []byte
	ncols int
	nrows int
}

// Reset starts a new row set with ncols columns, reusing the buffer.
func (w *RowSetWriter) Reset(ncols int) {
	w.buf = w.buf[:0]
	w.ncols = ncols
	w.nrows = 0
}

// Append adds one value of the current row; rows are implied by ncols.
func (w *RowSetWriter) Append(v any) error {
	var err error
	w.buf, err = AppendValue(w.buf, v)
	return err
}

// AppendValue adds one decoded value.
func (w *RowSetWriter) AppendValue(v Value) error {
	var err error
	w.buf, err = appendRaw(w.buf, v)
	return err
}

// EndRow counts one finished row.
func (w *RowSetWriter) EndRow() { w.nrows++ }

// AppendTo appends the encoded row set to dst.
func (w *RowSetWriter) AppendTo(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(w.ncols))
	dst = binary.AppendUvarint(dst, uint64(w.nrows))
	return append(dst, w.buf...)
}
