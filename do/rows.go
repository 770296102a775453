package do

import (
	"math"

	"github.com/stile-run/stile/internal/printf"
)

// Rows is a decoded row set, read row by row:
//
//	for rows.Next() { id := rows.Int(0); name := rows.Text(1) }
//	if err := rows.Err(); err != nil { ... }
//
// A getter applied to a value of another kind records an error (reported by
// Err) and returns the zero value, so a schema mistake is never silent.
type Rows struct {
	dec   Decoder
	ncols int
	nrows int
	seen  int
	row   []Value
	err   error
}

// DecodeRows parses the header of an encoded row set.
func DecodeRows(b []byte) (*Rows, error) {
	r := &Rows{}
	return r, r.reset(b)
}

// reset points r at a new row set, reusing its row buffer.
func (r *Rows) reset(b []byte) error {
	r.dec = Decoder{buf: b}
	r.seen, r.err = 0, nil
	nc, err := r.dec.Uvarint()
	if err != nil {
		return err
	}
	nr, err := r.dec.Uvarint()
	if err != nil {
		return err
	}
	if nc > 1<<16 || nr > uint64(len(b)) {
		return printf.Errorf("%w: implausible row set header %dx%d", ErrCodec, nr, nc)
	}
	r.ncols, r.nrows = int(nc), int(nr)
	if cap(r.row) < r.ncols {
		r.row = make([]Value, r.ncols)
	}
	r.row = r.row[:r.ncols]
	return nil
}

// Len is the number of rows in the set.
func (r *Rows) Len() int { return r.nrows }

// Columns is the number of columns per row.
func (r *Rows) Columns() int { return r.ncols }

// Next decodes the next row; it returns false at the end or on an error.
func (r *Rows) Next() bool {
	if r.err != nil || r.seen >= r.nrows {
		return false
	}
	for i := range r.row {
		v, err := r.dec.Value()
		if err != nil {
			r.err = err
			return false
		}
		r.row[i] = v
	}
	r.seen++
	return true
}

// Err returns the first decoding or type error.
func (r *Rows) Err() error { return r.err }

// Value returns column i of the current row.
func (r *Rows) Value(i int) Value { return r.row[i] }

// Null reports whether column i is NULL.
func (r *Rows) Null(i int) bool { return r.row[i].Kind == KindNull }

// Int returns column i as an integer. NULL reads as 0; a real with an
// integral value is accepted (JS hosts cannot tell 2.0 from 2).
func (r *Rows) Int(i int) int64 {
	v := r.row[i]
	switch v.Kind {
	case KindInt:
		return v.Int
	case KindNull:
		return 0
	case KindFloat:
		if v.Float == math.Trunc(v.Float) && math.Abs(v.Float) <= MaxSafeInteger {
			return int64(v.Float)
		}
	}
	r.fail(i, "integer")
	return 0
}

// Float returns column i as a real; integers convert.
func (r *Rows) Float(i int) float64 {
	v := r.row[i]
	switch v.Kind {
	case KindFloat:
		return v.Float
	case KindInt:
		return float64(v.Int)
	case KindNull:
		return 0
	}
	r.fail(i, "real")
	return 0
}

// Text returns column i as a string. NULL reads as "".
func (r *Rows) Text(i int) string {
	v := r.row[i]
	switch v.Kind {
	case KindText, KindBlob:
		return string(v.Bytes)
	case KindNull:
		return ""
	}
	r.fail(i, "text")
	return ""
}

// TextBytes returns column i's text or blob without copying: the bytes are
// valid until the next query on the same DB. NULL reads as nil.
func (r *Rows) TextBytes(i int) []byte {
	v := r.row[i]
	switch v.Kind {
	case KindText, KindBlob:
		return v.Bytes
	case KindNull:
		return nil
	}
	r.fail(i, "text")
	return nil
}

// Bytes returns column i as bytes (a copy). NULL reads as nil.
func (r *Rows) Bytes(i int) []byte {
	v := r.row[i]
	switch v.Kind {
	case KindText, KindBlob:
		return append([]byte(nil), v.Bytes...)
	case KindNull:
		return nil
	}
	r.fail(i, "blob")
	return nil
}

func (r *Rows) fail(i int, want string) {
	if r.err == nil {
		r.err = printf.Errorf("%w: column %d is %s, not %s", ErrCodec, i, r.row[i].Kind, want)
	}
}
