//go:build !unix

package bench

import "time"

// cpuTime is not measured here: the bench prints no cores.
func cpuTime() time.Duration { return 0 }
