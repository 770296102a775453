//go:build !linux

package wazerohost

import (
	"errors"

	"github.com/tetratelabs/wazero/experimental"
)

// imageAllocator is Linux's (memory_linux.go): elsewhere the module's
// data segments write its data into each new memory.
func imageAllocator(uint32, []byte) (experimental.MemoryAllocator, func() error, error) {
	return nil, nil, errors.New("copy-on-write module data is built for Linux only")
}
