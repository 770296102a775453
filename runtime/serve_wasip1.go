//go:build wasip1

package runtime

import (
	"runtime/debug"
	"unsafe"

	"github.com/stile-run/stile/do"
)

// The module's exports (see package do for the ABI).

// The module's heap is small and short-lived (a request's JSON and rows),
// and garbage collection is costly under Wasm: collect at 5x the live heap
// rather than 2x, within a soft limit well under a Durable Object's 128 MB.
func init() {
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(96 << 20)
}

var (
	requestBuf []byte
	module     *Tenant
)

//go:wasmexport stile_buffer
func exportBuffer(n int32) int32 {
	if n < 0 {
		panic("stile: negative request size")
	}
	if cap(requestBuf) < int(n) {
		requestBuf = make([]byte, n)
	}
	requestBuf = requestBuf[:n]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(requestBuf))))
}

//go:wasmexport stile_handle
func exportHandle(n int32) int64 {
	if module == nil {
		module = NewTenant(served, do.Imported())
	}
	out := module.Handle(requestBuf[:n])
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | int64(len(out))
}
