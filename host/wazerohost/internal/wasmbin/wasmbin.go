// Package wasmbin reads and writes the WebAssembly binary format as far as
// the wazero host's module rewrites need: the section list, LEB128 numbers
// and the few immediates they walk.
package wasmbin

import (
	"bytes"
	"errors"
)

// Header is the preamble of a WebAssembly 1.0 binary.
var Header = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// Section ids.
const (
	SecCustom    = 0
	SecType      = 1
	SecImport    = 2
	SecMemory    = 5
	SecGlobal    = 6
	SecCode      = 10
	SecData      = 11
	SecDataCount = 12
)

// Section is one section, its body undecoded.
type Section struct {
	ID   byte
	Body []byte
}

// ErrShort says the binary ended inside something.
var ErrShort = errors.New("unexpected end of the binary")

// Sections splits a binary into its sections.
func Sections(wasm []byte) ([]Section, error) {
	if len(wasm) < len(Header) || !bytes.Equal(wasm[:len(Header)], Header) {
		return nil, errors.New("not a WebAssembly 1.0 binary")
	}
	var out []Section
	r := Reader{B: wasm, At: len(Header)}
	for r.At < len(wasm) && r.Err == nil {
		id := r.Byte()
		body := r.Bytes(r.U32())
		if r.Err == nil {
			out = append(out, Section{ID: id, Body: body})
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return out, nil
}

// Encode writes a binary of the sections.
func Encode(secs []Section) []byte {
	out := append([]byte(nil), Header...)
	for _, s := range secs {
		out = append(out, s.ID)
		out = AppendULEB(out, uint32(len(s.Body)))
		out = append(out, s.Body...)
	}
	return out
}

// Reader decodes the binary format; the first error sticks in Err and
// every later read returns zero.
type Reader struct {
	B   []byte
	At  int
	Err error
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.Err != nil {
		return 0
	}
	if r.At >= len(r.B) {
		r.Err = ErrShort
		return 0
	}
	c := r.B[r.At]
	r.At++
	return c
}

// Bytes reads n bytes (a view of the binary).
func (r *Reader) Bytes(n uint32) []byte {
	if r.Err != nil {
		return nil
	}
	if uint64(r.At)+uint64(n) > uint64(len(r.B)) {
		r.Err = ErrShort
		return nil
	}
	b := r.B[r.At : r.At+int(n)]
	r.At += int(n)
	return b
}

// U32 reads an unsigned LEB128 of up to 32 bits.
func (r *Reader) U32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.Byte()
		v |= uint32(c&0x7F) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	if r.Err == nil {
		r.Err = errors.New("a LEB128 number longer than 5 bytes")
	}
	return 0
}

// S32 reads a signed LEB128 of up to 32 bits.
func (r *Reader) S32() int32 {
	var v int32
	for shift := 0; shift < 35; shift += 7 {
		c := r.Byte()
		v |= int32(c&0x7F) << shift
		if c&0x80 == 0 {
			if shift+7 < 32 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
	if r.Err == nil {
		r.Err = errors.New("a LEB128 number longer than 5 bytes")
	}
	return 0
}

// SkipLEB skips a LEB128 of up to 64 bits, signed or not.
func (r *Reader) SkipLEB() {
	for range 10 {
		if r.Byte()&0x80 == 0 {
			return
		}
	}
	if r.Err == nil {
		r.Err = errors.New("a LEB128 number longer than 10 bytes")
	}
}

// SkipLimits skips a table's or memory's limits.
func (r *Reader) SkipLimits() {
	flags := r.Byte()
	r.U32()
	if flags&1 != 0 {
		r.U32()
	}
}

// SkipBlockType skips a block type: empty (0x40), a value type, or a type
// index as a signed LEB128.
func (r *Reader) SkipBlockType() {
	if r.At < len(r.B) {
		if c := r.B[r.At]; c == 0x40 || (c >= 0x6F && c <= 0x7F) {
			r.At++
			return
		}
	}
	r.SkipLEB()
}

// AppendULEB appends v as an unsigned LEB128.
func AppendULEB(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendSLEB appends v as a signed LEB128.
func AppendSLEB(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
