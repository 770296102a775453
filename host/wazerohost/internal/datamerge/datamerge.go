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
	return rewrite(wasm, func(lo uint32, image []byte) []byte { return cut(lo, image) })
}

// Split returns wasm without its data segments, and the bytes they write
// from offset lo of memory 0, as linear memory holds them after
// instantiation: a host that lays image into each new memory itself (a
// copy-on-write mapping) instantiates the module with nothing to copy. It
// returns wasm itself and ErrUnsupported as Merge does; an empty image
// when the module writes no data.
//
// The image must lie inside the memory's initial size (it does in any
// module that instantiates): Split refuses a module whose memory is
// imported or smaller, with ErrUnsupported.
func Split(wasm []byte) (module []byte, lo uint32, image []byte, err error) {
	module, err = rewrite(wasm, func(l uint32, im []byte) []byte {
		lo, image = l, im
		return wasmbin.AppendULEB(nil, 0)
	})
	if err != nil || len(image) == 0 {
		return module, lo, image, err
	}
	if min, ok := initialMemory(wasm); !ok || uint64(lo)+uint64(len(image)) > min {
		return wasm, 0, nil, ErrUnsupported
	}
	return module, lo, image, nil
}

// initialMemory is the initial size in bytes of the memory a module
// defines; false if it defines none or several.
func initialMemory(wasm []byte) (uint64, bool) {
	secs, err := wasmbin.Sections(wasm)
	if err != nil {
		return 0, false
	}
	for _, s := range secs {
		if s.ID != wasmbin.SecMemory {
			continue
		}
		r := wasmbin.Reader{B: s.Body}
		if r.U32() != 1 {
			return 0, false
		}
		flags := r.Byte()
		min := r.U32()
		if r.Err != nil || flags > 1 { // 0: min only, 1: min and max; others: shared or 64-bit
			return 0, false
		}
		return uint64(min) << 16, true
	}
	return 0, false
}

// rewrite replaces the data section's body with what body makes of its
// image.
func rewrite(wasm []byte, body func(lo uint32, image []byte) []byte) ([]byte, error) {
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
		lo, image, err := layout(s.Body)
		if err != nil {
			return wasm, err
		}
		secs[i].Body = body(lo, image)
		return wasmbin.Encode(secs), nil
	}
	return wasm, nil
}

type segment struct {
	off  uint32
	data []byte
}

// layout reads a data section and returns the bytes its segments write,
// from the lowest offset any writes.
func layout(b []byte) (uint32, []byte, error) {
	r := wasmbin.Reader{B: b}
	n := r.U32()
	segs := make([]segment, 0, n)
	lo, hi := ^uint32(0), uint32(0)
	for range n {
		// flags 0: active, memory 0, offset expression i32.const … end.
		if r.U32() != 0 || r.Byte() != 0x41 {
			return 0, nil, ErrUnsupported
		}
		off := uint32(r.S32())
		if r.Byte() != 0x0B {
			return 0, nil, ErrUnsupported
		}
		data := r.Bytes(r.U32())
		if r.Err != nil {
			return 0, nil, fmt.Errorf("datamerge: data section: %w", r.Err)
		}
		if uint64(off)+uint64(len(data)) > 1<<32 {
			return 0, nil, fmt.Errorf("datamerge: a data segment past 4 GiB")
		}
		if len(data) > 0 {
			lo, hi = min(lo, off), max(hi, off+uint32(len(data)))
		}
		segs = append(segs, segment{off, data})
	}
	if r.At != len(b) {
		return 0, nil, fmt.Errorf("datamerge: %d bytes after the data segments", len(b)-r.At)
	}
	if lo >= hi {
		return 0, nil, nil
	}
	// Later segments overwrite earlier ones, as instantiation applies them.
	image := make([]byte, hi-lo)
	for _, s := range segs {
		copy(image[s.off-lo:], s.data)
	}
	return lo, image, nil
}

// cut cuts an image at offset lo into active segments at runs of
// zeros longer than Gap.
func cut(lo uint32, image []byte) []byte {
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
	return out
}
