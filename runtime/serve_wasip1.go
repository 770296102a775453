//go:build wasip1

package runtime

import (
	"unsafe"

	"github.com/stile-run/stile/do"
)

// The module's exports (see package do for the ABI).

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
