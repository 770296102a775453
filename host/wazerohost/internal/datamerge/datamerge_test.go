package datamerge

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"

	"github.com/stile-run/stile/host/wazerohost/internal/wasmbin"
)

type seg struct {
	off  int32
	data string
}

// module is a binary with one exported memory page and the segments.
func module(segs ...seg) []byte {
	sec := func(id byte, body []byte) wasmbin.Section { return wasmbin.Section{ID: id, Body: body} }
	data := wasmbin.AppendULEB(nil, uint32(len(segs)))
	for _, s := range segs {
		data = append(data, 0, 0x41)
		data = wasmbin.AppendSLEB(data, s.off)
		data = append(data, 0x0B)
		data = wasmbin.AppendULEB(data, uint32(len(s.data)))
		data = append(data, s.data...)
	}
	return wasmbin.Encode([]wasmbin.Section{
		sec(5, []byte{1, 0, 1}), // one memory, min 1 page
		sec(7, []byte{1, 3, 'm', 'e', 'm', 2, 0}),
		sec(wasmbin.SecData, data),
	})
}

func memoryOf(t *testing.T, wasm []byte) []byte {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.Instantiate(ctx, wasm)
	require.NoError(t, err)
	b, ok := mod.ExportedMemory("mem").Read(0, 1<<16)
	require.True(t, ok)
	return append([]byte(nil), b...)
}

func segments(t *testing.T, wasm []byte) uint32 {
	t.Helper()
	secs, err := wasmbin.Sections(wasm)
	require.NoError(t, err)
	for _, s := range secs {
		if s.ID == wasmbin.SecData {
			r := wasmbin.Reader{B: s.Body}
			return r.U32()
		}
	}
	return 0
}

func TestMergedMemoryIsTheSame(t *testing.T) {
	plain := module(
		seg{10, "abc"},
		seg{12, "XY"},        // overlaps the first: the later segment wins
		seg{20, "\x00\x00q"}, // zeros written explicitly
		seg{700, "z"},        // more than Gap zeros after the others
		seg{5, "\x00"},       // out of order, all zero
		seg{690, "\x00p"},    // a zero over nothing, then p
	)
	merged, err := Merge(plain)
	require.NoError(t, err)
	require.Equal(t, uint32(6), segments(t, plain))
	require.Equal(t, uint32(2), segments(t, merged), "one segment for 10..22, one for 691..700")
	require.Equal(t, memoryOf(t, plain), memoryOf(t, merged))
	mem := memoryOf(t, merged)
	require.Equal(t, "abXY", string(mem[10:14]))
	require.Equal(t, byte('q'), mem[22])
	require.Equal(t, "p\x00\x00\x00\x00\x00\x00\x00\x00z", string(mem[691:701]))
}

func TestLeavesWhatItCannotMerge(t *testing.T) {
	passive := wasmbin.Encode([]wasmbin.Section{{ID: wasmbin.SecData, Body: []byte{1, 1, 1, 'a'}}}) // flags 1: passive
	got, err := Merge(passive)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Equal(t, passive, got)

	none := module()
	got, err = Merge(none)
	require.NoError(t, err)
	require.Equal(t, memoryOf(t, none), memoryOf(t, got))

	_, err = Merge([]byte("nope"))
	require.Error(t, err)
}

// A module split from its data, with the image laid at lo, holds what the
// original module's memory holds.
func TestSplitImageIsTheData(t *testing.T) {
	plain := module(seg{10, "abc"}, seg{12, "XY"}, seg{700, "z"}, seg{5, "\x00"})
	stripped, lo, image, err := Split(plain)
	require.NoError(t, err)
	require.Equal(t, uint32(0), segments(t, stripped))
	require.Equal(t, uint32(5), lo, "from the lowest segment, zeros included")
	mem := memoryOf(t, stripped)
	require.Equal(t, make([]byte, 1<<16), mem, "the stripped module writes nothing")
	copy(mem[lo:], image)
	require.Equal(t, memoryOf(t, plain), mem)

	_, _, image, err = Split(module())
	require.NoError(t, err)
	require.Empty(t, image)
}
