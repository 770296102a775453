package worker

import "runtime"

// yieldToReady lets the goroutines that are ready to run go first, where
// the whole program runs on one thread (GOARCH=wasm: the edge executor).
// There, the handlers of a claim run one after the other: the first to
// end would send its report alone, and a drain woken by the first slot
// freed would claim for that slot alone, while the others are about to
// end too. Elsewhere they run in parallel, and it does nothing: it says
// whether it yielded.
func yieldToReady() bool {
	if runtime.GOARCH != "wasm" {
		return false
	}
	runtime.Gosched()
	return true
}
