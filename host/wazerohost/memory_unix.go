//go:build unix

package wazerohost

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryAllocator backs each instance's linear memory with an anonymous
// mapping of its maximum size, reserved and not committed: growing it
// never copies (the Go guest grows its memory many times while it starts),
// only the pages the guest touches are resident, and closing the instance
// returns them to the system at once instead of leaving a garbage buffer
// to the collector.
var memoryAllocator experimental.MemoryAllocator = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return &goMemory{max: max} // no mapping to be had: a Go slice, as wazero's own
	}
	return &mappedMemory{buf: b}
})

type mappedMemory struct{ buf []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.buf)) {
		return nil
	}
	return m.buf[:size]
}

func (m *mappedMemory) Free() {
	if m.buf != nil {
		syscall.Munmap(m.buf)
		m.buf = nil
	}
}
