//go:build wasip1

package runtime

import "runtime/debug"

// The module's heap is small and short-lived (a request's JSON and rows),
// and garbage collection is costly under Wasm: collect at 5x the live heap
// rather than 2x, within a soft limit well under a Durable Object's 128 MB.
func init() {
	debug.SetGCPercent(400)
	debug.SetMemoryLimit(96 << 20)
}
