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
	"slices"

	"github.com/stile-run/stile/host/wazerohost/internal/wasmbin"
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
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, fmt.Errorf("loopguard: %w", err)
	}
	var types [][]byte // each function type's encoding after 0x60
	check, checkFound := uint32(0), false
	importedGlobals := uint32(0)
	globalAt := -1 // index in secs of the global section
	for i, s := range secs {
		switch s.ID {
		case wasmbin.SecType:
			if types, err = readTypes(s.Body); err != nil {
				return nil, err
			}
		case wasmbin.SecImport:
			if check, checkFound, importedGlobals, err = readImports(s.Body, types, module, name); err != nil {
				return nil, err
			}
		case wasmbin.SecGlobal:
			globalAt = i
		}
	}
	if !checkFound {
		return nil, fmt.Errorf("loopguard: the module does not import %s.%s as a function of no arguments returning i64", module, name)
	}
	budget := importedGlobals
	global := []byte{0x7F, 0x01, 0x41} // i32, mutable, i32.const
	global = wasmbin.AppendSLEB(global, Interval)
	global = append(global, 0x0B)
	if globalAt >= 0 {
		r := wasmbin.Reader{B: secs[globalAt].Body}
		n := r.U32()
		if r.Err != nil {
			return nil, fmt.Errorf("loopguard: global section: %w", r.Err)
		}
		budget += n
		body := wasmbin.AppendULEB(nil, n+1)
		body = append(body, r.B[r.At:]...)
		secs[globalAt].Body = append(body, global...)
	} else {
		// Sections come in order; the global section goes before exports.
		at := len(secs)
		for i, s := range secs {
			if s.ID != wasmbin.SecCustom && s.ID > wasmbin.SecGlobal {
				at = i
				break
			}
		}
		secs = slices.Insert(secs, at, wasmbin.Section{ID: wasmbin.SecGlobal, Body: append([]byte{1}, global...)})
	}
	snippet := checkSnippet(budget, check)
	for i := range secs {
		if secs[i].ID != wasmbin.SecCode {
			continue
		}
		if secs[i].Body, err = instrumentCode(secs[i].Body, snippet); err != nil {
			return nil, err
		}
	}
	return wasmbin.Encode(secs), nil
}

// checkSnippet is the code inserted at each loop header.
func checkSnippet(budget, check uint32) []byte {
	g := wasmbin.AppendULEB(nil, budget)
	var b []byte
	b = append(append(b, 0x23), g...) // global.get
	b = append(b, 0x41, 0x01, 0x6B)   // i32.const 1; i32.sub
	b = append(append(b, 0x24), g...) // global.set
	b = append(append(b, 0x23), g...) // global.get
	b = append(b, 0x45, 0x04, 0x40)   // i32.eqz; if (no result)
	b = wasmbin.AppendSLEB(append(b, 0x41), Interval)
	b = append(append(b, 0x24), g...) // global.set
	b = wasmbin.AppendULEB(append(b, 0x10), check)
	return append(b, 0x1A, 0x0B) // drop; end
}

func readTypes(b []byte) ([][]byte, error) {
	r := wasmbin.Reader{B: b}
	n := r.U32()
	types := make([][]byte, 0, n)
	for range n {
		start := r.At
		if r.Byte() != 0x60 {
			return nil, fmt.Errorf("%w: a type that is not a function type", ErrUnsupported)
		}
		r.Bytes(r.U32()) // params
		r.Bytes(r.U32()) // results
		types = append(types, r.B[start+1:r.At])
		if r.Err != nil {
			return nil, fmt.Errorf("loopguard: type section: %w", r.Err)
		}
	}
	return types, nil
}

// readImports finds the function imported as module.name (its index) and
// counts the imported globals (defined globals come after them).
func readImports(b []byte, types [][]byte, module, name string) (fn uint32, found bool, globals uint32, err error) {
	r := wasmbin.Reader{B: b}
	funcs := uint32(0)
	for range r.U32() {
		mod, nm := string(r.Bytes(r.U32())), string(r.Bytes(r.U32()))
		switch kind := r.Byte(); kind {
		case 0: // function
			t := r.U32()
			// () -> i64: no params, one result of type i64.
			if mod == module && nm == name && int(t) < len(types) && bytes.Equal(types[t], []byte{0, 1, 0x7E}) {
				fn, found = funcs, true
			}
			funcs++
		case 1: // table: reftype, limits
			r.Byte()
			r.SkipLimits()
		case 2: // memory
			r.SkipLimits()
		case 3: // global: valtype, mutability
			r.Byte()
			r.Byte()
			globals++
		default:
			return 0, false, 0, fmt.Errorf("%w: import kind %d", ErrUnsupported, kind)
		}
		if r.Err != nil {
			return 0, false, 0, fmt.Errorf("loopguard: import section: %w", r.Err)
		}
	}
	return fn, found, globals, r.Err
}

// instrumentCode rewrites the code section, inserting snippet after every
// loop's block type.
func instrumentCode(b []byte, snippet []byte) ([]byte, error) {
	r := wasmbin.Reader{B: b}
	n := r.U32()
	out := wasmbin.AppendULEB(nil, n)
	var body []byte
	for i := range n {
		size := r.U32()
		fn := r.Bytes(size)
		if r.Err != nil {
			return nil, fmt.Errorf("loopguard: code section: %w", r.Err)
		}
		var err error
		if body, err = instrumentBody(body[:0], fn, snippet); err != nil {
			return nil, fmt.Errorf("function %d: %w", i, err)
		}
		out = wasmbin.AppendULEB(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

func instrumentBody(out, fn, snippet []byte) ([]byte, error) {
	r := wasmbin.Reader{B: fn}
	for range r.U32() { // locals: count, type
		r.U32()
		r.Byte()
	}
	copied := 0
	for r.At < len(fn) && r.Err == nil {
		op := r.Byte()
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			r.SkipBlockType()
			if op == 0x03 && r.Err == nil {
				out = append(out, fn[copied:r.At]...)
				out = append(out, snippet...)
				copied = r.At
			}
		case op == 0x0C || op == 0x0D: // br, br_if
			r.U32()
		case op == 0x0E: // br_table
			for range r.U32() {
				r.U32()
			}
			r.U32()
		case op == 0x10 || op == 0x12: // call, return_call
			r.U32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.U32()
			r.U32()
		case op == 0x1C: // select t*
			for range r.U32() {
				r.Byte()
			}
		case op >= 0x20 && op <= 0x26: // locals, globals, table.get/set
			r.U32()
		case op >= 0x28 && op <= 0x3E: // loads and stores
			if align := r.U32(); align&0x40 != 0 {
				return nil, fmt.Errorf("%w: a memory access with a memory index", ErrUnsupported)
			}
			r.U32()
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			r.U32()
		case op == 0x41 || op == 0x42: // i32.const, i64.const
			r.SkipLEB()
		case op == 0x43:
			r.Bytes(4)
		case op == 0x44:
			r.Bytes(8)
		case op == 0xD0: // ref.null
			r.Byte()
		case op == 0xD2: // ref.func
			r.U32()
		case op == 0xFC:
			if err := prefixedFC(&r); err != nil {
				return nil, err
			}
		case op <= 0x01, op == 0x05, op == 0x0B, op == 0x0F, op == 0x1A, op == 0x1B,
			op >= 0x45 && op <= 0xC4, op == 0xD1:
			// no immediates
		default:
			return nil, fmt.Errorf("%w: opcode 0x%02x at byte %d", ErrUnsupported, op, r.At-1)
		}
	}
	if r.Err != nil {
		return nil, r.Err
	}
	return append(out, fn[copied:]...), nil
}

func prefixedFC(r *wasmbin.Reader) error {
	switch sub := r.U32(); {
	case sub <= 7: // saturating truncations
	case sub == 8: // memory.init: data, memory
		r.U32()
		r.U32()
	case sub == 9 || sub == 13 || sub == 15 || sub == 16 || sub == 17: // data.drop, elem.drop, table.grow/size/fill
		r.U32()
	case sub == 10 || sub == 12 || sub == 14: // memory.copy, table.init, table.copy
		r.U32()
		r.U32()
	case sub == 11: // memory.fill
		r.U32()
	default:
		return fmt.Errorf("%w: 0xfc %d", ErrUnsupported, sub)
	}
	return nil
}
