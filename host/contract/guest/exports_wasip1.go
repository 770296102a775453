//go:build wasip1

package main

import (
	"unsafe"

	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/contract"
)

// The entry of package do's ABI, as runtime/serve_wasip1.go exports it for
// a tenant module.

var (
	requestBuf []byte
	guest      *contract.Guest
)

//lint:ignore U1000 the host calls it through go:wasmexport, which the unused check does not count as a use
//go:wasmexport stile_buffer
func exportBuffer(n int32) int32 {
	if cap(requestBuf) < int(n) {
		requestBuf = make([]byte, n)
	}
	requestBuf = requestBuf[:n]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(requestBuf))))
}

//lint:ignore U1000 the host calls it through go:wasmexport, which the unused check does not count as a use
//go:wasmexport stile_handle
func exportHandle(n int32) int64 {
	if guest == nil {
		guest = contract.New(do.Imported())
	}
	out := guest.Handle(requestBuf[:n])
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | int64(len(out))
}
