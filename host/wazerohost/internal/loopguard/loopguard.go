// Package loopguard rewrites a WebAssembly module so that a call into it
// can be stopped cheaply: every loop header counts a budget down, and each
// time it runs out the module calls one of its own imported host
// functions, where the host decides whether the call is past its deadline
// (and, by panicking, stops it).
//
// The rewrite adds one mutable i32 global and, after each loop opcode,
//
//	global.get $budget; i32.const 1; i32.sub; global.set $budget
//	global.get $budget; i32.eqz
//	if
//	  i32.const Interval; global.set $budget
//	  call $check; drop
//	end
//
// It adds no function, so no index in the module moves: calls, tables,
// exports and the name section stay valid byte for byte. The checked
// function must already be imported and take nothing and return one i64
// (Stile's clock import does). A backward branch in Wasm can only target a
// loop, so a spinning guest reaches the check every Interval iterations;
// the host call is also where the Go scheduler can stop the goroutine for a
// garbage collection, which a guest spinning in native code never offers.
package loopguard

import (
	"bytes"
	"errors"
	"fmt"
)

// Interval is how many loop headers pass between two host checks. A Go
// guest enters a loop header about once per function call, so this is a
// check every few tens of microseconds of guest work.
const Interval = 1 << 14

// ErrUnsupported says the module uses an instruction this rewriter does not
// decode (SIMD, threads, exceptions, several memories): the host must guard
// it another way.
var ErrUnsupported = errors.New("loopguard: unsupported instruction")

// Instrument returns wasm with the loop checks calling the function
// imported as module.name.
func Instrument(wasm []byte, module, name string) ([]byte, error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:8], []byte{0, 'a', 's', 'm', 1, 0, 0, 0}) {
		return nil, errors.New("loopguard: not a WebAssembly 1.0 binary")
	}
	secs, err := sections(wasm[8:])
	if err != nil {
		return nil, err
	}
	var types [][]byte // each function type's encoding after 0x60
	check, checkFound := uint32(0), false
	importedGlobals := uint32(0)
	globalAt := -1 // index in secs of the global section
	for i, s := range secs {
		switch s.id {
		case secType:
			if types, err = readTypes(s.body); err != nil {
				return nil, err
			}
		case secImport:
			if check, checkFound, importedGlobals, err = readImports(s.body, types, module, name); err != nil {
				return nil, err
			}
		case secGlobal:
			globalAt = i
		}
	}
	if !checkFound {
		return nil, fmt.Errorf("loopguard: the module does not import %s.%s as a function of no arguments returning i64", module, name)
	}
	budget := importedGlobals
	global := []byte{0x7F, 0x01, 0x41} // i32, mutable, i32.const
	global = appendSLEB(global, Interval)
	global = append(global, 0x0B)
	if globalAt >= 0 {
		r := reader{b: secs[globalAt].body}
		n := r.u32()
		if r.err != nil {
			return nil, fmt.Errorf("loopguard: global section: %w", r.err)
		}
		budget += n
		body := appendULEB(nil, n+1)
		body = append(body, r.b[r.at:]...)
		secs[globalAt].body = append(body, global...)
	} else {
		// Sections come in order; the global section goes before exports.
		at := len(secs)
		for i, s := range secs {
			if s.id != secCustom && s.id > secGlobal {
				at = i
				break
			}
		}
		secs = append(secs[:at], append([]section{{id: secGlobal, body: append([]byte{1}, global...)}}, secs[at:]...)...)
	}
	snippet := checkSnippet(budget, check)
	for i := range secs {
		if secs[i].id != secCode {
			continue
		}
		if secs[i].body, err = instrumentCode(secs[i].body, snippet); err != nil {
			return nil, err
		}
	}
	out := append([]byte(nil), wasm[:8]...)
	for _, s := range secs {
		out = append(out, s.id)
		out = appendULEB(out, uint32(len(s.body)))
		out = append(out, s.body...)
	}
	return out, nil
}

// checkSnippet is the code inserted at each loop header.
func checkSnippet(budget, check uint32) []byte {
	g := appendULEB(nil, budget)
	var b []byte
	b = append(append(b, 0x23), g...) // global.get
	b = append(b, 0x41, 0x01, 0x6B)   // i32.const 1; i32.sub
	b = append(append(b, 0x24), g...) // global.set
	b = append(append(b, 0x23), g...) // global.get
	b = append(b, 0x45, 0x04, 0x40)   // i32.eqz; if (no result)
	b = appendSLEB(append(b, 0x41), Interval)
	b = append(append(b, 0x24), g...) // global.set
	b = appendULEB(append(b, 0x10), check)
	return append(b, 0x1A, 0x0B) // drop; end
}

const (
	secCustom = 0
	secType   = 1
	secImport = 2
	secGlobal = 6
	secCode   = 10
)

type section struct {
	id   byte
	body []byte
}

func sections(b []byte) ([]section, error) {
	var out []section
	r := reader{b: b}
	for r.at < len(b) && r.err == nil {
		id := r.byte()
		n := r.u32()
		body := r.bytes(n)
		if r.err != nil {
			break
		}
		out = append(out, section{id: id, body: body})
	}
	if r.err != nil {
		return nil, fmt.Errorf("loopguard: section list: %w", r.err)
	}
	return out, nil
}

func readTypes(b []byte) ([][]byte, error) {
	r := reader{b: b}
	n := r.u32()
	types := make([][]byte, 0, n)
	for range n {
		start := r.at
		if r.byte() != 0x60 {
			return nil, fmt.Errorf("%w: a type that is not a function type", ErrUnsupported)
		}
		r.bytes(r.u32()) // params
		r.bytes(r.u32()) // results
		types = append(types, r.b[start+1:r.at])
		if r.err != nil {
			return nil, fmt.Errorf("loopguard: type section: %w", r.err)
		}
	}
	return types, nil
}

// readImports finds the function imported as module.name (its index) and
// counts the imported globals (defined globals come after them).
func readImports(b []byte, types [][]byte, module, name string) (fn uint32, found bool, globals uint32, err error) {
	r := reader{b: b}
	funcs := uint32(0)
	for range r.u32() {
		mod, nm := string(r.bytes(r.u32())), string(r.bytes(r.u32()))
		switch kind := r.byte(); kind {
		case 0: // function
			t := r.u32()
			// () -> i64: no params, one result of type i64.
			if mod == module && nm == name && int(t) < len(types) && bytes.Equal(types[t], []byte{0, 1, 0x7E}) {
				fn, found = funcs, true
			}
			funcs++
		case 1: // table: reftype, limits
			r.byte()
			r.limits()
		case 2: // memory
			r.limits()
		case 3: // global: valtype, mutability
			r.byte()
			r.byte()
			globals++
		default:
			return 0, false, 0, fmt.Errorf("%w: import kind %d", ErrUnsupported, kind)
		}
		if r.err != nil {
			return 0, false, 0, fmt.Errorf("loopguard: import section: %w", r.err)
		}
	}
	return fn, found, globals, r.err
}

// instrumentCode rewrites the code section, inserting snippet after every
// loop's block type.
func instrumentCode(b []byte, snippet []byte) ([]byte, error) {
	r := reader{b: b}
	n := r.u32()
	out := appendULEB(nil, n)
	var body []byte
	for i := range n {
		size := r.u32()
		fn := r.bytes(size)
		if r.err != nil {
			return nil, fmt.Errorf("loopguard: code section: %w", r.err)
		}
		var err error
		if body, err = instrumentBody(body[:0], fn, snippet); err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = appendULEB(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

func instrumentBody(out, fn, snippet []byte) ([]byte, error) {
	r := reader{b: fn}
	for range r.u32() { // locals: count, type
		r.u32()
		r.byte()
	}
	copied := 0
	for r.at < len(fn) && r.err == nil {
		op := r.byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.blockType()
			if op == 0x03 && r.err == nil {
				out = append(out, fn[copied:r.at]...)
				out = append(out, snippet...)
				copied = r.at
			}
		case op == 0x0C || op == 0x0D: // br, br_if
			r.u32()
		case op == 0x0E: // br_table
			for range r.u32() {
				r.u32()
			}
			r.u32()
		case op == 0x10 || op == 0x12: // call, return_call
			r.u32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1C: // select t*
			for range r.u32() {
				r.byte()
			}
		case op >= 0x20 && op <= 0x26: // locals, globals, table.get/set
			r.u32()
		case op >= 0x28 && op <= 0x3E: // loads and stores
			if align := r.u32(); align&0x40 != 0 {
				return nil, fmt.Errorf("%w: a memory access with a memory index", ErrUnsupported)
			}
			r.u32()
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			r.u32()
		case op == 0x41 || op == 0x42: // i32.const, i64.const
			r.leb()
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op == 0xD0: // ref.null
			r.byte()
		case op == 0xD2: // ref.func
			r.u32()
		case op == 0xFC:
			if err := r.prefixedFC(); err != nil {
				return nil, err
			}
		case op <= 0x01, op == 0x05, op == 0x0B, op == 0x0F, op == 0x1A, op == 0x1B,
			op >= 0x45 && op <= 0xC4, op == 0xD1:
			// no immediates
		default:
			return nil, fmt.Errorf("%w: opcode 0x%02x at byte %d", ErrUnsupported, op, r.at-1)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return append(out, fn[copied:]...), nil
}

func (r *reader) prefixedFC() error {
	switch sub := r.u32(); {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init: data, memory
		r.u32()
		r.u32()
	case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.u32()
	case sub == 10 || sub == 12 || sub == 14: // memory.copy, table.init, table.copy
		r.u32()
		r.u32()
	case sub == 11: // memory.fill
		r.u32()
	default:
		return fmt.Errorf("%w: 0xfc %d", ErrUnsupported, sub)
	}
	return nil
}

// reader decodes the binary format; the first error sticks.
type reader struct {
	b   []byte
	at  int
	err error
}

var errShort = errors.New("unexpected end of the binary")

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if r.at >= len(r.b) {
		r.err = errShort
		return 0
	}
	c := r.b[r.at]
	r.at++
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(r.at)+uint64(n) > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	b := r.b[r.at : r.at+int(n)]
	r.at += int(n)
	return b
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint32(c&0x7F) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	if r.err == nil {
		r.err = errors.New("a LEB128 number longer than 5 bytes")
	}
	return 0
}

// leb skips a signed LEB128 of up to 64 bits.
func (r *reader) leb() {
	for range 10 {
		if r.byte()&0x80 == 0 {
			return
		}
	}
	if r.err == nil {
		r.err = errors.New("a LEB128 number longer than 10 bytes")
	}
}

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}

// blockType skips a block type: empty (0x40), a value type, or a type
// index as a signed LEB128.
func (r *reader) blockType() {
	if r.at < len(r.b) {
		switch c := r.b[r.at]; {
		case c == 0x40 || (c >= 0x6F && c <= 0x7F):
			r.at++
			return
		}
	}
	r.leb()
}

func appendULEB(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
