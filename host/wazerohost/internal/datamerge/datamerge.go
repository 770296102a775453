// Package datamerge rewrites a WebAssembly module's data section into a
// few segments, so instantiating it is cheap.
//
// Go's linker writes one active data segment per run of non-zero bytes:
// the default tenant module has about 45,000 of them for 1.2 MB of data,
// and wazero evaluates each one's offset and copies it on every
// instantiation (about 1.5 ms, a third of reopening an idle tenant).
// Merge lays the segments out as linear memory would hold them after
// instantiation and cuts that image into segments at runs of zeros longer
// than a gap (memory starts zeroed, so a zero is never written), which
// leaves a handful.
package datamerge

import (
	"errors"
	"fmt"

	"github.com/stile-run/stile/host/wazerohost/internal/wasmbin"
)

// Gap is the run of zero bytes that ends a merged segment: shorter runs
// are written as part of it.
const Gap = 256

// ErrUnsupported says the module's data section has segments Merge keeps
// as they are (passive ones, other memories, offsets that are not
// constants): the module is returned unchanged.
var ErrUnsupported = errors.New("datamerge: a data segment that is not active in memory 0 at a constant offset")

// Merge returns wasm with its data segments merged, or wasm itself and
// ErrUnsupported.
func Merge(wasm []byte) ([]byte, error) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return nil, fmt.Errorf("datamerge: %w", err)
	}
	for i, s := range secs {
		if s.ID == wasmbin.SecDataCount {
			return wasm, ErrUnsupported // passive segments count against it
		}
		if s.ID != wasmbin.SecData {
			continue
		}
		body, err := merge(s.Body)
		if err != nil {
			return wasm, err
		}
		secs[i].Body = body
		return wasmbin.Encode(secs), nil
	}
	return wasm, nil
}

type segment struct {
	off  uint32
	data []byte
}

func merge(b []byte) ([]byte, error) {
	r := wasmbin.Reader{B: b}
	n := r.U32()
	segs := make([]segment, 0, n)
	lo, hi := ^uint32(0), uint32(0)
	for range n {
		// flags 0: active, memory 0, offset expression i32.const … end.
		if r.U32() != 0 || r.Byte() != 0x41 {
			return nil, ErrUnsupported
		}
		off := uint32(r.S32())
		if r.Byte() != 0x0B {
			return nil, ErrUnsupported
		}
		data := r.Bytes(r.U32())
		if r.Err != nil {
			return nil, fmt.Errorf("datamerge: data section: %w", r.Err)
		}
		if uint64(off)+uint64(len(data)) > 1<<32 {
			return nil, fmt.Errorf("datamerge: a data segment past 4 GiB")
		}
		if len(data) > 0 {
			lo, hi = min(lo, off), max(hi, off+uint32(len(data)))
		}
		segs = append(segs, segment{off, data})
	}
	if r.At != len(b) {
		return nil, fmt.Errorf("datamerge: %d bytes after the data segments", len(b)-r.At)
	}
	if lo >= hi {
		return wasmbin.AppendULEB(nil, 0), nil
	}
	// Later segments overwrite earlier ones, as instantiation applies them.
	image := make([]byte, hi-lo)
	for _, s := range segs {
		copy(image[s.off-lo:], s.data)
	}
	var runs [][2]int // [start, end) in image
	zeros, start := 0, -1
	for i, c := range image {
		if c != 0 {
			if start < 0 {
				start = i
			} else if zeros > Gap {
				runs = append(runs, [2]int{start, i - zeros})
				start = i
			}
			zeros = 0
			continue
		}
		zeros++
	}
	if start >= 0 {
		runs = append(runs, [2]int{start, len(image) - zeros})
	}
	out := wasmbin.AppendULEB(nil, uint32(len(runs)))
	for _, run := range runs {
		out = append(out, 0, 0x41)
		out = wasmbin.AppendSLEB(out, int32(lo+uint32(run[0])))
		out = append(out, 0x0B)
		out = wasmbin.AppendULEB(out, uint32(run[1]-run[0]))
		out = append(out, image[run[0]:run[1]]...)
	}
	return out, nil
}
