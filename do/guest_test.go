package do_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
)

// fakeImports is an in-memory import set: the host's side of the ABI as a
// wasm host implements it (payloads into the guest's buffer when they fit,
// else pending for Take), over a toy database.
//
// The toy database answers `SELECT ?` with one row holding the parameter,
// and `FAIL <message>` with the message as the database's refusal.
type fakeImports struct {
	pending   []byte
	commitErr string // when set, a commit fails with this message
	now       int64
	logs      []string
	txs       int // transactions opened, nested ones included
}

func (f *fakeImports) SQL(sql string, params, out []byte) int64 {
	if msg, ok := strings.CutPrefix(sql, "FAIL "); ok {
		return f.hand([]byte(msg), out, true)
	}
	vals, err := do.DecodeParams(params)
	if err != nil {
		return f.hand([]byte(err.Error()), out, true)
	}
	var w do.RowSetWriter
	w.Reset(len(vals))
	for _, v := range vals {
		if err := w.AppendValue(v); err != nil {
			return f.hand([]byte(err.Error()), out, true)
		}
	}
	w.EndRow()
	return f.hand(w.AppendTo(nil), out, false)
}

// hand gives the guest a payload: into out when it fits, else pending.
func (f *fakeImports) hand(b, out []byte, isErr bool) int64 {
	f.pending = nil
	if len(b) <= len(out) {
		copy(out, b)
	} else {
		f.pending = append([]byte(nil), b...)
	}
	if isErr {
		return -int64(len(b)) - 1
	}
	return int64(len(b))
}

func (f *fakeImports) Take(out []byte) {
	copy(out, f.pending)
	f.pending = nil
}

func (f *fakeImports) Tx(id int32, body func(int32) int32) int64 {
	f.txs++
	if body(id) != do.TxCommit {
		return do.TxRolledBack
	}
	if f.commitErr != "" {
		f.pending = []byte(f.commitErr)
		return -int64(len(f.commitErr)) - 1
	}
	return do.TxCommitted
}

func (f *fakeImports) Now() int64 { return f.now }

func (f *fakeImports) Log(level do.Level, msg string) {
	f.logs = append(f.logs, strconv.Itoa(int(level))+" "+msg)
}

// echo is a handler that answers each request with its path, counting the
// requests of its instance.
type echo struct {
	h     do.Host
	calls int
	out   []byte
}

func (e *echo) Handle(frame []byte) []byte {
	e.calls++
	req, err := do.DecodeRequest(frame)
	resp := do.Response{Status: 200, AlarmAt: do.AlarmUnchanged, Body: []byte(req.Path)}
	if err != nil {
		resp = do.Response{Status: 400, AlarmAt: do.AlarmUnchanged, Body: []byte(err.Error())}
	}
	e.out = do.AppendResponse(e.out[:0], resp)
	return e.out
}

// served returns a module over a fresh fake and the handlers it opened.
func served() (*do.Module, *fakeImports, *[]*echo) {
	f := &fakeImports{}
	var opened []*echo
	m := do.OverABI(f, func(h do.Host) do.Handler {
		e := &echo{h: h}
		opened = append(opened, e)
		return e
	})
	return m, f, &opened
}

// call is what a host does for one request: ask for a buffer, write the
// frame into it, and call the entry.
func call(t *testing.T, m *do.Module, req do.Request) do.Response {
	t.Helper()
	frame := do.AppendRequest(nil, req)
	buf, err := m.Buffer(int32(len(frame)))
	require.NoError(t, err)
	copy(buf, frame)
	out, err := m.Handle(int32(len(frame)))
	require.NoError(t, err)
	resp, err := do.DecodeResponse(out)
	require.NoError(t, err)
	return resp
}

func TestModuleBufferIsReusedAndGrows(t *testing.T) {
	m, _, _ := served()
	a, err := m.Buffer(100)
	require.NoError(t, err)
	require.Len(t, a, 100)
	b, err := m.Buffer(10)
	require.NoError(t, err)
	require.Len(t, b, 10)
	require.Same(t, &a[0], &b[0], "a smaller request reuses the buffer")
	c, err := m.Buffer(1000)
	require.NoError(t, err)
	require.Len(t, c, 1000)
	empty, err := m.Buffer(0)
	require.NoError(t, err)
	require.Empty(t, empty)
}

func TestModuleRefusesSizesNoHostMayAskFor(t *testing.T) {
	m, _, opened := served()
	for _, n := range []int32{-1, -1 << 31, do.MaxRequestBytes + 1} {
		_, err := m.Buffer(n)
		require.ErrorIs(t, err, do.ErrRequestSize, "buffer of %d bytes", n)
	}
	_, err := m.Buffer(16)
	require.NoError(t, err)
	for _, n := range []int32{-1, 17} {
		_, err := m.Handle(n)
		require.ErrorIs(t, err, do.ErrRequestSize, "a frame of %d bytes in a 16-byte buffer", n)
	}
	require.Empty(t, *opened, "no refused call reached the handler")
}

func TestModuleAnswersFramesWithOneHandlerOverItsHost(t *testing.T) {
	m, _, opened := served()
	require.Empty(t, *opened, "nothing opens the handler before the first request")
	resp := call(t, m, do.Request{Kind: do.KindAPI, Method: "GET", Path: "/v1/t/acme/jobs"})
	require.Equal(t, 200, resp.Status)
	require.Equal(t, "/v1/t/acme/jobs", string(resp.Body))
	resp = call(t, m, do.Request{Kind: do.KindAPI, Method: "GET", Path: "/b"})
	require.Equal(t, "/b", string(resp.Body), "a shorter frame in the reused buffer is read at its own length")
	require.Len(t, *opened, 1)
	require.Equal(t, 2, (*opened)[0].calls)
	require.Same(t, m.Host(), (*opened)[0].h)
}

func TestModuleQueryReadsPayloadsInTheBufferAndPending(t *testing.T) {
	m, f, _ := served()
	db := do.NewDB(m.Host())
	for _, size := range []int{0, 10, 100 << 10, 5 << 20} { // in the 64 KiB buffer, over it, over the 4 MiB it grows to
		// A value holds at most do.MaxValueBytes: split the payload over columns.
		cols := 1 + size/(1<<20)
		text := strings.Repeat("x", size/cols)
		args := make([]any, cols)
		for i := range args {
			args[i] = text
		}
		rows, err := db.Query(`SELECT ?`, args...)
		require.NoError(t, err, "%d bytes", size)
		require.True(t, rows.Next())
		for i := range cols {
			require.Equal(t, text, rows.Text(i), "%d bytes", size)
		}
		require.Nil(t, f.pending, "the guest took the pending payload")

		msg := "refused " + text
		err = db.Exec(`FAIL ` + msg)
		var se *do.SQLError
		require.ErrorAs(t, err, &se)
		require.Equal(t, msg, se.Msg, "%d bytes", size)
	}
}

func TestModuleTxCarriesTheBodysErrorAndTheHostsFailure(t *testing.T) {
	m, f, _ := served()
	db := do.NewDB(m.Host())

	require.NoError(t, db.Tx(func() error {
		return db.Tx(func() error { return db.Exec(`SELECT ?`, 1) })
	}))
	require.Equal(t, 2, f.txs, "a nested Tx is a second transaction of the host")

	errBody := errors.New("the body failed")
	require.Same(t, errBody, db.Tx(func() error { return errBody }))

	// The commit's message is pending with the host: it is not what the
	// last statement left in the guest's buffer.
	f.commitErr = "disk I/O error: SQLITE_IOERR"
	err := db.Tx(func() error {
		_, err := db.Query(`SELECT ?`, strings.Repeat("stale rows ", 100))
		return err
	})
	require.ErrorIs(t, err, do.ErrTxFailed)
	var se *do.SQLError
	require.ErrorAs(t, err, &se)
	require.Equal(t, f.commitErr, se.Msg)
}

func TestModuleTxBodyOfAnUnknownTransactionTraps(t *testing.T) {
	m, _, _ := served()
	require.Panics(t, func() { m.TxBody(0) })
	require.Panics(t, func() { m.TxBody(-1) })
}

func TestModuleHostPassesTheClockAndLog(t *testing.T) {
	m, f, _ := served()
	f.now = 1_700_000_000_000
	require.Equal(t, f.now, m.Host().Now())
	m.Host().Log(do.LevelWarn, "careful")
	require.Equal(t, []string{"2 careful"}, f.logs)
}

func TestServeRefusesNil(t *testing.T) {
	require.Panics(t, func() { do.Serve(nil) })
}
