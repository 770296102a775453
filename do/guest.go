package do

import "errors"

// The guest side of the ABI, written against rawImports so that its buffer
// handling is tested natively; guest_wasip1.go binds it to the real imports.

type rawImports interface {
	sql(sql string, params []byte, out []byte) int64
	take(out []byte)
	tx(id int32) int64
	now() int64
	log(level Level, msg string)
}

// guestHost implements Host over the imports of a Wasm module.
type guestHost struct {
	raw rawImports
	out []byte // reused result buffer
	txs []txFrame
}

type txFrame struct {
	body func() error
	err  error
}

const initialOut = 64 << 10

func newGuestHost(raw rawImports) *guestHost {
	return &guestHost{raw: raw, out: make([]byte, initialOut)}
}

// payload returns the n-byte payload of the last call, fetching it with take
// when it did not fit into the reused buffer.
func (g *guestHost) payload(n int64) []byte {
	if n <= int64(len(g.out)) {
		return g.out[:n]
	}
	buf := make([]byte, n)
	g.raw.take(buf)
	if n <= 4<<20 {
		g.out = buf // keep growing the reused buffer up to 4 MiB
		return buf[:n]
	}
	return buf
}

func (g *guestHost) Query(sql string, params []byte) ([]byte, error) {
	n := g.raw.sql(sql, params, g.out)
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
	rc := g.raw.tx(int32(id))
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
		return errors.Join(ErrTxFailed, &SQLError{Msg: string(g.payload(-rc - 1))})
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

func (g *guestHost) Now() int64 { return g.raw.now() }

func (g *guestHost) Log(level Level, msg string) { g.raw.log(level, msg) }
