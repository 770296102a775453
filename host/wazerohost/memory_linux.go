//go:build linux

package wazerohost

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// imageAllocator returns an allocator whose memories start with image at
// offset lo (the module's data, which the module then no longer writes):
// the image is kept once, in a sealed memory file, and mapped
// copy-on-write into each new memory. A new instance copies nothing, and
// the pages of data it only reads (most of a Go module's: type
// information, tables, strings) are one copy for every instance in the
// process. close releases the file once no instance is made any more.
func imageAllocator(lo uint32, image []byte) (alloc experimental.MemoryAllocator, close func() error, err error) {
	page := uint64(os.Getpagesize())
	start := uint64(lo) / page * page
	size := (uint64(lo) + uint64(len(image)) - start + page - 1) / page * page
	fd, err := unix.MemfdCreate("stile-module-data", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, nil, fmt.Errorf("module data file: %w", err)
	}
	file := os.NewFile(uintptr(fd), "stile-module-data")
	laid := make([]byte, size)
	copy(laid[uint64(lo)-start:], image)
	if _, err := file.WriteAt(laid, 0); err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("module data file: %w", err)
	}
	// Sealed: nothing can change the data under the instances mapping it.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL); err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("seal the module data file: %w", err)
	}
	var mu sync.Mutex // held while the file is mapped, and to close it
	closed := false
	alloc = experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		copied := &goMemory{max: max, image: image, at: uint64(lo)}
		b, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
		if err != nil {
			return copied
		}
		mu.Lock()
		defer mu.Unlock()
		if closed || start+size > uint64(len(b)) {
			syscall.Munmap(b)
			return copied
		}
		if _, err := unix.MmapPtr(fd, 0, unsafe.Pointer(&b[start]), uintptr(size),
			unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED); err != nil {
			// A fixed mapping that failed may have unmapped the range: the
			// reservation is given up, and the data copied as wazero would.
			syscall.Munmap(b)
			return copied
		}
		return &mappedMemory{buf: b}
	})
	close = func() error {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return nil
		}
		closed = true
		return file.Close()
	}
	return alloc, close, nil
}
