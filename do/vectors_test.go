package do_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json")

// vectors pins the ABI's encodings for every implementation: this file
// checks the Go codec against it, host/workerd/js/abi_test.mjs the JS one.
type vectors struct {
	Params    []paramVector    `json:"params"`
	Rows      []rowsVector     `json:"rows"`
	Requests  []requestVector  `json:"requests"`
	Responses []responseVector `json:"responses"`
}

// A value in a vector: {"int": "123"} (decimal string, to survive JSON),
// {"float": 1.5}, {"text": "…"}, {"blob": "hex"}, or {} for NULL.
type value struct {
	Int   *string  `json:"int,omitempty"`
	Float *float64 `json:"float,omitempty"`
	Text  *string  `json:"text,omitempty"`
	Blob  *string  `json:"blob,omitempty"`
}

type paramVector struct {
	Values []value `json:"values"`
	Hex    string  `json:"hex"`
}

type rowsVector struct {
	Columns int       `json:"columns"`
	Rows    [][]value `json:"rows"`
	Hex     string    `json:"hex"`
}

type requestVector struct {
	Kind   int    `json:"kind"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query"`
	Body   string `json:"body"`
	Hex    string `json:"hex"`
}

type responseVector struct {
	Status  int    `json:"status"`
	Flags   int    `json:"flags"`
	AlarmAt int64  `json:"alarm_at"`
	HoldMs  int64  `json:"hold_ms"`
	Body    string `json:"body"`
	Hex     string `json:"hex"`
}

func i(s string) value    { return value{Int: &s} }
func f(x float64) value   { return value{Float: &x} }
func txt(s string) value  { return value{Text: &s} }
func blob(h string) value { return value{Blob: &h} }
func (v value) goValue() any {
	switch {
	case v.Int != nil:
		n, _ := json.Number(*v.Int).Int64()
		return n
	case v.Float != nil:
		return *v.Float
	case v.Text != nil:
		return *v.Text
	case v.Blob != nil:
		b, _ := hex.DecodeString(*v.Blob)
		return b
	}
	return nil
}

func cases() vectors {
	return vectors{
		Params: []paramVector{
			{Values: []value{}},
			{Values: []value{{}, i("0"), i("1"), i("-1"), i("63"), i("-64"), i("64"), i("1764480000000")}},
			{Values: []value{i("9007199254740991"), i("-9007199254740991")}},
			{Values: []value{f(1.5), f(-2.25), f(math.MaxFloat64), txt(""), txt("héllo \"q\"\n"), blob("00ff10"), blob("")}},
		},
		Rows: []rowsVector{
			{Columns: 0, Rows: [][]value{}},
			{Columns: 2, Rows: [][]value{{i("1"), txt("a")}, {{}, f(2.5)}, {i("-7"), blob("cafe")}}},
		},
		Requests: []requestVector{
			{Kind: 1, Method: "POST", Path: "/v1/t/acme/jobs", Query: "x=1", Body: `{"kind":"echo"}`},
			{Kind: 2},
		},
		Responses: []responseVector{
			{Status: 201, Flags: 1, AlarmAt: 1764480000000, Body: `{"id":"1"}`},
			{Status: 200, HoldMs: 20000, Body: `{"jobs":[]}`},
			{Status: 500},
			{Status: 400, AlarmAt: do.AlarmUnchanged, Body: `{"code":"x","message":"y"}`},
		},
	}
}

func encode(t *testing.T, v vectors) vectors {
	for k := range v.Params {
		args := make([]any, len(v.Params[k].Values))
		for j, x := range v.Params[k].Values {
			args[j] = x.goValue()
		}
		b, err := do.EncodeParams(nil, args...)
		require.NoError(t, err)
		v.Params[k].Hex = hex.EncodeToString(b)
	}
	for k, rv := range v.Rows {
		var w do.RowSetWriter
		w.Reset(rv.Columns)
		for _, row := range rv.Rows {
			for _, x := range row {
				require.NoError(t, w.Append(x.goValue()))
			}
			w.EndRow()
		}
		v.Rows[k].Hex = hex.EncodeToString(w.AppendTo(nil))
	}
	for k, r := range v.Requests {
		v.Requests[k].Hex = hex.EncodeToString(do.AppendRequest(nil, do.Request{Kind: do.RequestKind(r.Kind),
			Method: r.Method, Path: r.Path, Query: r.Query, Body: []byte(r.Body)}))
	}
	for k, r := range v.Responses {
		v.Responses[k].Hex = hex.EncodeToString(do.AppendResponse(nil, do.Response{Status: r.Status,
			Flags: byte(r.Flags), AlarmAt: r.AlarmAt, HoldMs: r.HoldMs, Body: []byte(r.Body)}))
	}
	return v
}

func TestVectors(t *testing.T) {
	got := encode(t, cases())
	b, err := json.MarshalIndent(got, "", "  ")
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile("testdata/vectors.json", append(b, '\n'), 0o644))
	}
	want, err := os.ReadFile("testdata/vectors.json")
	require.NoError(t, err, "run go test ./do -run TestVectors -update")
	require.JSONEq(t, string(want), string(b), "the Go codec no longer matches testdata/vectors.json")

	// And everything decodes back to what it was.
	for _, p := range got.Params {
		raw, _ := hex.DecodeString(p.Hex)
		vals, err := do.DecodeParams(raw)
		require.NoError(t, err)
		require.Len(t, vals, len(p.Values))
	}
	for _, r := range got.Responses {
		raw, _ := hex.DecodeString(r.Hex)
		resp, err := do.DecodeResponse(raw)
		require.NoError(t, err)
		require.Equal(t, r.Status, resp.Status)
		require.Equal(t, r.AlarmAt, resp.AlarmAt)
		require.Equal(t, r.HoldMs, resp.HoldMs)
		require.Equal(t, r.Body, string(resp.Body))
	}
	for _, r := range got.Requests {
		raw, _ := hex.DecodeString(r.Hex)
		req, err := do.DecodeRequest(raw)
		require.NoError(t, err)
		require.Equal(t, r.Path, req.Path)
		require.Equal(t, r.Body, string(req.Body))
	}
}
