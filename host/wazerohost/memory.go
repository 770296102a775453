package wazerohost

// goMemory is a linear memory in a Go slice that grows by copying, as
// wazero's default one: where memory cannot be mapped.
type goMemory struct {
	buf []byte
	max uint64
	// image is written at offset at when the memory is first allocated
	// (the module's data, for a module that no longer writes it).
	image []byte
	at    uint64
}

func (m *goMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	b := make([]byte, size, min(m.max, max(size, 2*uint64(cap(m.buf)))))
	copy(b, m.buf)
	if m.image != nil && m.at+uint64(len(m.image)) <= size {
		copy(b[m.at:], m.image)
		m.image = nil
	}
	m.buf = b
	return b
}

func (m *goMemory) Free() { m.buf = nil }
