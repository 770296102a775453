//go:build !unix

package host_test

import "time"

// processCPU is not measured here.
func processCPU() time.Duration { return 0 }
