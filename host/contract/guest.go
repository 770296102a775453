package contract

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/stile-run/stile/do"
)

// Guest is the contract guest of one instance.
type Guest struct {
	h     do.Host
	db    *do.DB
	calls int // requests this instance served: 1 on a fresh one
	out   []byte
}

// New returns the guest over h.
func New(h do.Host) *Guest { return &Guest{h: h, db: do.NewDB(h)} }

// Handle answers one request frame: the entry a module exports.
func (g *Guest) Handle(frame []byte) []byte {
	g.calls++
	req, err := do.DecodeRequest(frame)
	var resp do.Response
	if err != nil {
		resp = answer(400, map[string]any{"error": err.Error()})
	} else {
		resp = g.serve(req)
	}
	g.out = do.AppendResponse(g.out[:0], resp)
	return g.out
}

func answer(status int, v any) do.Response {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return do.Response{Status: status, AlarmAt: do.AlarmUnchanged, Body: b}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

var (
	errInner = errors.New("inner body failed")
	errOuter = errors.New("outer body failed")
)

const schema = `CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v);
CREATE TABLE IF NOT EXISTS ints(k TEXT PRIMARY KEY, n INTEGER);
CREATE TABLE IF NOT EXISTS fired(id INTEGER PRIMARY KEY, at INTEGER NOT NULL)`

func (g *Guest) serve(req do.Request) do.Response {
	if err := g.db.Exec(schema); err != nil {
		return answer(500, map[string]any{"error": err.Error()})
	}
	if req.Kind == do.KindAlarm {
		if err := g.db.Exec(`INSERT INTO fired(at) VALUES (?)`, g.db.Now()); err != nil {
			return answer(500, map[string]any{"error": err.Error()})
		}
		resp := answer(200, map[string]any{})
		resp.AlarmAt = 0 // the alarm that fired was the last one wanted
		return resp
	}
	_, rest, _ := strings.Cut(req.Path, "/contract/")
	q, _ := url.ParseQuery(req.Query)
	n, _ := strconv.Atoi(q.Get("n"))
	switch rest {
	case "instance":
		return answer(200, map[string]any{"calls": g.calls})
	case "rows":
		return g.rows()
	case "put":
		return answer(200, map[string]any{"error": errText(g.put(q.Get("k")))})
	case "savepoints":
		return g.savepoints()
	case "trap":
		return g.trap(n)
	case "params":
		return g.params(n)
	case "statement":
		return g.statement(n)
	case "value":
		return g.value(n, q.Get("kind"))
	case "integers":
		return g.integers()
	case "refuse":
		return g.refuse(string(req.Body), q.Get("in") == "tx")
	case "alarm":
		return g.alarm(q)
	case "fired":
		return g.fired()
	case "headers":
		return g.headers(req)
	}
	return answer(404, map[string]any{"error": "no contract case " + rest})
}

func (g *Guest) keys() ([]string, error) {
	rows, err := g.db.Query(`SELECT k FROM kv ORDER BY k`)
	if err != nil {
		return nil, err
	}
	keys := []string{}
	for rows.Next() {
		keys = append(keys, rows.Text(0))
	}
	return keys, rows.Err()
}

func (g *Guest) rows() do.Response {
	keys, err := g.keys()
	return answer(200, map[string]any{"keys": keys, "error": errText(err)})
}

func (g *Guest) put(k string) error { return g.db.Exec(`INSERT INTO kv(k, v) VALUES (?, 1)`, k) }

// savepoints: an inner failure rolls back only the inner part, at any
// depth; an outer commit keeps the rest; an outer rollback drops all, the
// inner parts it had committed included.
func (g *Guest) savepoints() do.Response {
	var inner, deepest error
	kept := g.db.Tx(func() error {
		if err := g.put("a"); err != nil {
			return err
		}
		inner = g.db.Tx(func() error {
			if err := g.put("b"); err != nil {
				return err
			}
			return errInner
		})
		if err := g.put("c"); err != nil {
			return err
		}
		return g.db.Tx(func() error {
			if err := g.put("d"); err != nil {
				return err
			}
			deepest = g.db.Tx(func() error {
				if err := g.put("e"); err != nil {
					return err
				}
				return errInner
			})
			return nil
		})
	})
	dropped := g.db.Tx(func() error {
		if err := g.put("f"); err != nil {
			return err
		}
		if err := g.db.Tx(func() error { return g.put("g") }); err != nil {
			return err
		}
		return errOuter
	})
	keys, err := g.keys()
	return answer(200, map[string]any{"inner": errText(inner), "deepest": errText(deepest),
		"kept": errText(kept), "dropped": errText(dropped), "keys": keys, "error": errText(err)})
}

// trap panics at the n-th statement of a transaction, as a bug would.
func (g *Guest) trap(n int) do.Response {
	err := g.db.Tx(func() error {
		for i := 1; ; i++ {
			if i == n {
				panic(fmt.Sprintf("contract: trap at statement %d", n))
			}
			if err := g.put("t" + strconv.Itoa(i)); err != nil {
				return err
			}
		}
	})
	return answer(200, map[string]any{"error": errText(err)})
}

// params binds n parameters: through the guest's own check (do.DB), and
// around it, so the host's refusal is seen too.
func (g *Guest) params(n int) do.Response {
	sql := "SELECT 0 IN (" + strings.Repeat("?, ", n-1) + "?) AS v"
	args := make([]any, n)
	raw := binary.AppendUvarint(nil, uint64(n))
	for i := range args {
		args[i] = 1
		raw, _ = do.AppendValue(raw, 1)
	}
	guestErr := g.db.Exec(sql, args...)
	_, hostErr := g.h.Query(sql, raw)
	return answer(200, map[string]any{"guest": errText(guestErr), "host": errText(hostErr)})
}

// statement runs an n-byte statement.
func (g *Guest) statement(n int) do.Response {
	head, tail := "SELECT 1 AS v /* ", " */"
	sql := head + strings.Repeat("x", n-len(head)-len(tail)) + tail
	rows, err := g.db.Query(sql)
	v := int64(0)
	if err == nil && rows.Next() {
		v = rows.Int(0)
	}
	return answer(200, map[string]any{"bytes": len(sql), "v": v, "error": errText(err)})
}

// value stores an n-byte text or blob and reads it back whole.
func (g *Guest) value(n int, kind string) do.Response {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	var v any = b
	if kind == "text" {
		v = string(b)
	}
	if err := g.db.Exec(`INSERT OR REPLACE INTO kv(k, v) VALUES ('big', ?)`, v); err != nil {
		return answer(200, map[string]any{"error": err.Error()})
	}
	rows, err := g.db.Query(`SELECT length(CAST(v AS BLOB)), typeof(v), v FROM kv WHERE k = 'big'`)
	if err != nil {
		return answer(200, map[string]any{"error": "read back: " + err.Error()})
	}
	res := map[string]any{}
	if rows.Next() {
		res["length"], res["type"] = rows.Int(0), rows.Text(1)
		res["same"] = string(rows.TextBytes(2)) == string(b)
	}
	res["error"] = errText(rows.Err())
	if err := g.db.Exec(`DELETE FROM kv WHERE k = 'big'`); err != nil {
		res["error"] = err.Error()
	}
	return answer(200, res)
}

// integers: what crosses at the edge of ±(2^53-1), where a Durable Object
// stops returning integers exactly.
func (g *Guest) integers() do.Response {
	res := map[string]any{}
	for _, c := range []struct {
		k string
		n int64
	}{{"max", do.MaxSafeInteger}, {"min", do.MinSafeInteger}} {
		if err := g.db.Exec(`INSERT OR REPLACE INTO ints(k, n) VALUES (?, ?)`, c.k, c.n); err != nil {
			res[c.k] = "write: " + err.Error()
			continue
		}
		res[c.k] = g.read(`SELECT n FROM ints WHERE k = ?`, c.k)
	}
	res["bind_2^53"] = errText(g.db.Exec(`SELECT ?`, int64(1)<<53))
	// Around the guest's codec, as a broken guest would send it.
	raw := binary.AppendUvarint(nil, 1)
	raw = append(raw, byte(do.KindInt))
	raw = binary.AppendVarint(raw, 1<<53)
	_, err := g.h.Query(`SELECT ?`, raw)
	res["raw_2^53"] = errText(err)
	res["sql_2^53"] = g.read(`SELECT 9007199254740991 + 1`)
	res["sql_2^53+1"] = g.read(`SELECT 9007199254740993`)
	return answer(200, res)
}

// read describes the one value a query returns: its kind and value, and
// what Rows.Int makes of it.
func (g *Guest) read(sql string, args ...any) string {
	rows, err := g.db.Query(sql, args...)
	if err != nil {
		return "query: " + err.Error()
	}
	if !rows.Next() {
		return "no row: " + errText(rows.Err())
	}
	v := rows.Value(0)
	s := v.Kind.String() + " "
	switch v.Kind {
	case do.KindInt:
		s += strconv.FormatInt(v.Int, 10)
	case do.KindFloat:
		s += strconv.FormatFloat(v.Float, 'f', -1, 64)
	}
	n := rows.Int(0)
	if err := rows.Err(); err != nil {
		return s + "; Int: " + err.Error()
	}
	return s + "; Int: " + strconv.FormatInt(n, 10)
}

// refuse runs sql, outside any transaction or inside one.
func (g *Guest) refuse(sql string, inTx bool) do.Response {
	var err error
	if inTx {
		txErr := g.db.Tx(func() error {
			err = g.db.Exec(sql)
			return nil
		})
		if txErr != nil {
			err = txErr
		}
	} else {
		err = g.db.Exec(sql)
	}
	return answer(200, map[string]any{"error": errText(err)})
}

// alarm answers with AlarmAt as asked: in=ms from the host's now, keep
// (AlarmUnchanged) or clear (0).
func (g *Guest) alarm(q url.Values) do.Response {
	now := g.db.Now()
	resp := answer(200, map[string]any{"now": now})
	switch {
	case q.Has("in"):
		in, _ := strconv.ParseInt(q.Get("in"), 10, 64)
		resp = answer(200, map[string]any{"now": now, "at": now + in})
		resp.AlarmAt = now + in
	case q.Has("clear"):
		resp.AlarmAt = 0
	}
	return resp
}

func (g *Guest) fired() do.Response {
	rows, err := g.db.Query(`SELECT at FROM fired ORDER BY id`)
	if err != nil {
		return answer(500, map[string]any{"error": err.Error()})
	}
	at := []int64{}
	for rows.Next() {
		at = append(at, rows.Int(0))
	}
	return answer(200, map[string]any{"fired": at, "now": g.db.Now(), "error": errText(rows.Err())})
}

// headers echoes the request's headers in the body and as echo-{name}
// response headers, and sets allow and stile-route as a route would.
func (g *Guest) headers(req do.Request) do.Response {
	got := make([][2]string, 0, len(req.Headers))
	for _, h := range req.Headers {
		got = append(got, [2]string{h.Name, h.Value})
	}
	sort.Slice(got, func(i, j int) bool { return got[i][0] < got[j][0] })
	resp := answer(200, map[string]any{"headers": got})
	resp.Headers.Set(do.HeaderAllow, "GET, POST")
	resp.Headers.Set(do.HeaderRoute, "/v1/t/{tenant}/contract/headers")
	for _, h := range req.Headers {
		resp.Headers = append(resp.Headers, do.Header{Name: "echo-" + h.Name, Value: h.Value})
	}
	return resp
}
