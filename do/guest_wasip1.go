//go:build wasip1

package do

import "unsafe"

// The module's imports and exports: thin shims binding a Module (guest.go)
// to the host. A Go export may live in any package of the module; they all
// live here, so that every tenant module (and the contract guest) exports
// the same code through Serve.

//go:wasmimport stile sql
func importSQL(sqlPtr unsafe.Pointer, sqlLen int32, argsPtr unsafe.Pointer, argsLen int32, outPtr unsafe.Pointer, outCap int32) int64

//go:wasmimport stile take
func importTake(ptr unsafe.Pointer)

//go:wasmimport stile tx
func importTx(id int32) int64

//go:wasmimport stile now
func importNow() int64

//go:wasmimport stile log
func importLog(level int32, ptr unsafe.Pointer, n int32)

type wasmImports struct{}

func (wasmImports) SQL(sql string, params []byte, out []byte) int64 {
	return importSQL(unsafe.Pointer(unsafe.StringData(sql)), int32(len(sql)),
		unsafe.Pointer(unsafe.SliceData(params)), int32(len(params)),
		unsafe.Pointer(unsafe.SliceData(out)), int32(len(out)))
}

func (wasmImports) Take(out []byte) { importTake(unsafe.Pointer(unsafe.SliceData(out))) }

// Tx ignores body: the host calls it back as the export stile_tx_body.
func (wasmImports) Tx(id int32, _ func(int32) int32) int64 { return importTx(id) }

func (wasmImports) Now() int64 { return importNow() }

func (wasmImports) Log(level Level, msg string) {
	importLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// served is the module Serve made.
var served *Module

func serve(open func(Host) Handler) { served = OverABI(wasmImports{}, open) }

// module is the served module; an export called before Serve traps.
func module() *Module {
	if served == nil {
		panic("stile: the module never called do.Serve (call it from an init function of package main)")
	}
	return served
}

//lint:ignore U1000 the host calls it through go:wasmexport, which the unused check does not count as a use
//go:wasmexport stile_buffer
func exportBuffer(n int32) int32 {
	buf, err := module().Buffer(n)
	if err != nil {
		panic(err) // only a broken host asks for such a buffer: trap
	}
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(buf))))
}

//lint:ignore U1000 the host calls it through go:wasmexport, which the unused check does not count as a use
//go:wasmexport stile_handle
func exportHandle(n int32) int64 {
	out, err := module().Handle(n)
	if err != nil {
		panic(err)
	}
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(out))))<<32 | int64(len(out))
}

//lint:ignore U1000 the host calls it through go:wasmexport, which the unused check does not count as a use
//go:wasmexport stile_tx_body
func exportTxBody(id int32) int32 { return module().TxBody(id) }
