//go:build !wasip1

package do

// Imported is the Host of a Wasm module. Outside a wasip1 module there is
// none: native code is given its Host by host/native instead.
func Imported() Host {
	panic("do.Imported: only a wasip1 tenant module has an imported host; natively, use host/native")
}
