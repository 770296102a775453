//go:build !unix

package wazerohost

import "github.com/tetratelabs/wazero/experimental"

var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	return &goMemory{max: max}
})
