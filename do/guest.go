package do

import (
	"errors"

	"github.com/stile-run/stile/internal/printf"
)

// The guest side of the ABI: what a module's exports do, written once
// against Imports so that it runs natively over a fake import set
// (guest_test.go) as it runs in a wasip1 module over the real imports
// (guest_wasip1.go, whose exports are thin shims over a Module).

// Handler answers request frames: one frame in (frame.go), one response
// frame out, valid until the next call. A tenant module's handler is its
// runtime.Tenant; the contract suite's is its guest.
type Handler interface {
	Handle(frame []byte) []byte
}

// Serve makes the handler that open returns the entry of this module:
// every export of abi.go goes to it. The first request opens it over the
// module's Host (so that nothing touches storage while the module starts).
// Call Serve from an init function of the main package: inside a Wasm
// reactor module main never runs, init does.
//
// Natively Serve only checks open: no host calls the exports of a native
// program (host/native is given its handler instead).
func Serve(open func(Host) Handler) {
	if open == nil {
		panic("stile: do.Serve(nil)")
	}
	serve(open)
}

// Imports is the host's side of the ABI as guest code calls it: the five
// imports of abi.go, with guest memory as Go slices. Inside a wasip1 module
// they are the host's functions; natively they are a test's fake.
type Imports interface {
	// SQL is ImportSQL: n >= 0 is an n-byte row set, n < 0 a (-n-1)-byte
	// message; the payload is in out[:len] when it fits, else pending for
	// Take.
	SQL(sql string, params, out []byte) int64
	// Take is ImportTake: it copies the pending payload into out.
	Take(out []byte)
	// Tx is ImportTx: it opens a transaction, calls the guest's
	// ExportTxBody(id) once — body, which the real host reaches as the
	// export instead — and commits when that returned TxCommit. A failure
	// (n < 0) leaves its (-n-1)-byte message pending for Take.
	Tx(id int32, body func(id int32) int32) int64
	// Now is ImportNow.
	Now() int64
	// Log is ImportLog.
	Log(level Level, msg string)
}

// MaxRequestBytes is the largest request frame a module accepts into its
// buffer: well above a request body (api.MaxBodyBytes, 10 MiB) with its
// headers, well under the module's memory. A host asking for more is
// broken, and the module traps rather than grow toward its limit.
const MaxRequestBytes = 32 << 20

// ErrRequestSize is a request frame size a module refuses (negative, over
// MaxRequestBytes, or over the buffer the host asked for).
var ErrRequestSize = errors.New("request frame size refused")

// Module is the guest side of one module instance: its exports over an
// import set. Inside a wasip1 module Serve makes the one Module; natively
// OverABI makes one over a fake, to test the guest's side of the ABI.
type Module struct {
	host    *guestHost
	open    func(Host) Handler
	handler Handler
	request []byte // the buffer of the next request frame, reused
}

// OverABI returns the module whose handler open makes over imports.
func OverABI(imports Imports, open func(Host) Handler) *Module {
	return &Module{host: newGuestHost(imports), open: open}
}

// Host is the Host the module's handler is given: the imports, behind the
// guest's buffers and transaction frames.
func (m *Module) Host() Host { return m.host }

// Buffer is ExportBuffer: the buffer into which the host writes the next
// request frame of n bytes. The buffer is reused across calls.
func (m *Module) Buffer(n int32) ([]byte, error) {
	if n < 0 || n > MaxRequestBytes {
		return nil, printf.Errorf("%w: the host asked for a buffer of %d bytes (at most %d)", ErrRequestSize, n, MaxRequestBytes)
	}
	if cap(m.request) < int(n) {
		m.request = make([]byte, n)
	}
	m.request = m.request[:n]
	return m.request, nil
}

// Handle is ExportHandle: it answers the n-byte request frame the host
// wrote into the buffer, opening the handler on the first request. The
// response stays valid until the next call into the module.
func (m *Module) Handle(n int32) ([]byte, error) {
	if n < 0 || int(n) > len(m.request) {
		return nil, printf.Errorf("%w: a request frame of %d bytes in a buffer of %d", ErrRequestSize, n, len(m.request))
	}
	if m.handler == nil {
		m.handler = m.open(m.host)
	}
	return m.handler.Handle(m.request[:n]), nil
}

// TxBody is ExportTxBody: it runs the body of the transaction the guest
// opened with ImportTx(id) and returns TxCommit or TxRollback.
func (m *Module) TxBody(id int32) int32 { return m.host.txBody(id) }

// guestHost implements Host over the imports of a module.
type guestHost struct {
	raw Imports
	out []byte // reused result buffer
	txs []txFrame
	// body is txBody as a func value, made once: a method value made at
	// each Tx would be a heap allocation per transaction.
	body func(int32) int32
}

type txFrame struct {
	body func() error
	err  error
}

const initialOut = 64 << 10

func newGuestHost(raw Imports) *guestHost {
	g := &guestHost{raw: raw, out: make([]byte, initialOut)}
	g.body = g.txBody
	return g
}

// payload returns the n-byte payload of the last SQL call, fetching it with
// Take when it did not fit into the reused buffer.
func (g *guestHost) payload(n int64) []byte {
	if n <= int64(len(g.out)) {
		return g.out[:n]
	}
	buf := g.take(n)
	if n <= 4<<20 {
		g.out = buf // keep growing the reused buffer up to 4 MiB
	}
	return buf
}

// take fetches an n-byte pending payload into a fresh buffer.
func (g *guestHost) take(n int64) []byte {
	buf := make([]byte, n)
	g.raw.Take(buf)
	return buf
}

func (g *guestHost) Query(sql string, params []byte) ([]byte, error) {
	n := g.raw.SQL(sql, params, g.out)
	if n < 0 {
		return nil, &SQLError{Msg: string(g.payload(-n - 1))}
	}
	return g.payload(n), nil
}

// ErrGuard is what a store returns, wrapped, when a guarded write (an
// UPDATE or DELETE whose WHERE repeats what was read) matched no row: the
// state moved since it was read. The request's transaction rolls back.
var ErrGuard = errors.New("a guarded write found the state moved since it was read")

// ErrNoRow is what a store returns, wrapped, when a row the schema
// guarantees (a checkpoint, the tenant identity, an aggregate) is missing.
var ErrNoRow = errors.New("a row that must exist is missing")

// ErrTxFailed wraps a transaction the host could not commit.
var ErrTxFailed = errors.New("transaction failed")

func (g *guestHost) Tx(body func() error) error {
	id := len(g.txs)
	g.txs = append(g.txs, txFrame{body: body})
	rc := g.raw.Tx(int32(id), g.body)
	f := g.txs[id]
	g.txs = g.txs[:id]
	switch {
	case rc == TxCommitted:
		return nil
	case rc == TxRolledBack:
		if f.err == nil {
			return ErrTxFailed
		}
		return f.err
	case rc < 0:
		// ImportTx has no output buffer: its message is always pending,
		// never in g.out (which holds the last statement's rows).
		return errors.Join(ErrTxFailed, &SQLError{Msg: string(g.take(-rc - 1))})
	}
	return ErrTxFailed
}

// txBody runs the body of transaction id; the host calls it through
// ExportTxBody while the guest is inside ImportTx.
func (g *guestHost) txBody(id int32) int32 {
	if id < 0 || int(id) >= len(g.txs) {
		// Only a broken host can get here; failing loudly traps.
		panic("stile: host called stile_tx_body for an unknown transaction")
	}
	// The body may open nested transactions, which grow g.txs: index again
	// afterwards rather than holding a pointer into it.
	err := g.txs[id].body()
	g.txs[id].err = err
	if err != nil {
		return TxRollback
	}
	return TxCommit
}

func (g *guestHost) Now() int64 { return g.raw.Now() }

func (g *guestHost) Log(level Level, msg string) { g.raw.Log(level, msg) }
