package loopguard

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/stile-run/stile/host/wazerohost/internal/wasmbin"
)

// counter is a hand-assembled module:
//
//	(import "stile" "now" (func (result i64)))
//	(global $g (mut i32) (i32.const 7))
//	(func (export "count") (param i32) (result i32) (local i32)
//	  loop
//	    local.get 1  i32.const 1  i32.add  local.tee 1
//	    local.get 0  i32.lt_u
//	    br_if 0
//	  end
//	  local.get 1)
//	(func (export "seven") (result i32) global.get $g)
func counter(t *testing.T) []byte {
	t.Helper()
	sec := func(id byte, body ...byte) []byte {
		return append(wasmbin.AppendULEB([]byte{id}, uint32(len(body))), body...)
	}
	wasm := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	wasm = append(wasm, sec(1, 3, // types
		0x60, 0, 1, 0x7E, // () -> i64
		0x60, 1, 0x7F, 1, 0x7F, // (i32) -> i32
		0x60, 0, 1, 0x7F)...) // () -> i32
	wasm = append(wasm, sec(2, 1, 5, 's', 't', 'i', 'l', 'e', 3, 'n', 'o', 'w', 0, 0)...)
	wasm = append(wasm, sec(3, 2, 1, 2)...)
	wasm = append(wasm, sec(6, 1, 0x7F, 1, 0x41, 7, 0x0B)...)
	wasm = append(wasm, sec(7, 2,
		5, 'c', 'o', 'u', 'n', 't', 0, 1,
		5, 's', 'e', 'v', 'e', 'n', 0, 2)...)
	count := []byte{1, 1, 0x7F, // one local i32
		0x03, 0x40,
		0x20, 1, 0x41, 1, 0x6A, 0x22, 1,
		0x20, 0, 0x49,
		0x0D, 0,
		0x0B,
		0x20, 1, 0x0B}
	seven := []byte{0, 0x23, 0, 0x0B}
	code := []byte{2}
	code = append(wasmbin.AppendULEB(code, uint32(len(count))), count...)
	code = append(wasmbin.AppendULEB(code, uint32(len(seven))), seven...)
	return append(wasm, sec(10, code...)...)
}

// run instantiates wasm with now counting its calls (and panicking with
// stop once asked to), and calls count(n).
func run(t *testing.T, wasm []byte, n uint32, stopAfter int) (calls int, seven uint64, err error) {
	t.Helper()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	_, err = rt.NewHostModuleBuilder("stile").NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, _ api.Module, stack []uint64) {
			calls++
			if stopAfter > 0 && calls >= stopAfter {
				panic(errStop)
			}
			stack[0] = 0
		}), nil, []api.ValueType{api.ValueTypeI64}).Export("now").Instantiate(ctx)
	require.NoError(t, err)
	mod, err := rt.Instantiate(ctx, wasm)
	require.NoError(t, err, "the rewritten module is valid")
	out, err := mod.ExportedFunction("seven").Call(ctx)
	require.NoError(t, err)
	seven = out[0]
	out, err = mod.ExportedFunction("count").Call(ctx, uint64(n))
	if err == nil {
		require.Equal(t, uint64(n), out[0], "the loop computes what it did before")
	}
	return calls, seven, err
}

var errStop = errors.New("stop")

func TestLoopsCallTheCheckEveryInterval(t *testing.T) {
	plain := counter(t)
	calls, _, err := run(t, plain, 3*Interval+5, 0)
	require.NoError(t, err)
	require.Zero(t, calls, "the module as written never reads the clock")

	guarded, err := Instrument(plain, "stile", "now")
	require.NoError(t, err)
	calls, seven, err := run(t, guarded, 3*Interval+5, 0)
	require.NoError(t, err)
	require.Equal(t, 3, calls, "one check per Interval loop headers")
	require.Equal(t, uint64(7), seven, "the module's own global keeps its index and value")
}

func TestTheCheckStopsASpinningCall(t *testing.T) {
	guarded, err := Instrument(counter(t), "stile", "now")
	require.NoError(t, err)
	calls, _, err := run(t, guarded, 1<<31, 2) // billions of iterations
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 2, calls)
}

func TestRefusesWhatItCannotGuard(t *testing.T) {
	plain := counter(t)
	_, err := Instrument(plain, "stile", "clock")
	require.ErrorContains(t, err, "does not import stile.clock")

	_, err = Instrument([]byte("not wasm"), "stile", "now")
	require.ErrorContains(t, err, "not a WebAssembly 1.0 binary")

	// A SIMD prefix in place of count's i32.lt_u.
	simd := append([]byte(nil), plain...)
	at := bytes.Index(simd, []byte{0x20, 0, 0x49, 0x0D}) + 2
	require.Equal(t, byte(0x49), simd[at])
	simd[at] = 0xFD
	_, err = Instrument(simd, "stile", "now")
	require.ErrorIs(t, err, ErrUnsupported)

	_, err = Instrument(plain[:len(plain)-3], "stile", "now")
	require.Error(t, err, "a truncated binary")
}
