//go:build wasip1

package do

import "unsafe"

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

func (wasmImports) sql(sql string, params []byte, out []byte) int64 {
	return importSQL(unsafe.Pointer(unsafe.StringData(sql)), int32(len(sql)),
		unsafe.Pointer(unsafe.SliceData(params)), int32(len(params)),
		unsafe.Pointer(unsafe.SliceData(out)), int32(len(out)))
}

func (wasmImports) take(out []byte) { importTake(unsafe.Pointer(unsafe.SliceData(out))) }

func (wasmImports) tx(id int32) int64 { return importTx(id) }

func (wasmImports) now() int64 { return importNow() }

func (wasmImports) log(level Level, msg string) {
	importLog(int32(level), unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

var imported = newGuestHost(wasmImports{})

// Imported is the Host of this Wasm module: the object that instantiated it.
func Imported() Host { return imported }

//go:wasmexport stile_tx_body
func exportTxBody(id int32) int32 { return imported.txBody(id) }
