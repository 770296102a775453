package do_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
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
	// Refused frames: the encoding Go's Append* writes without checking,
	// which Go's Decode* and JS's decodeResponse must refuse, and JS's
	// encodeRequest must refuse to write. Error is a part of the message.
	RefusedRequests  []refusedVector `json:"refused_requests"`
	RefusedResponses []refusedVector `json:"refused_responses"`
	// Traceparents pins the transports' W3C check (Go and worker.mjs).
	Traceparents []traceparentVector `json:"traceparents"`
}

// headers in a vector: [["name", "value"], …].
type headers [][2]string

func (h headers) do() do.Headers {
	if len(h) == 0 {
		return nil
	}
	out := make(do.Headers, len(h))
	for i, nv := range h {
		out[i] = do.Header{Name: nv[0], Value: nv[1]}
	}
	return out
}

type refusedVector struct {
	requestVector
	Status int    `json:"status,omitempty"`
	Error  string `json:"error"`
}

type traceparentVector struct {
	Value string `json:"value"`
	Valid bool   `json:"valid"`
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
	Kind    int     `json:"kind"`
	Method  string  `json:"method"`
	Path    string  `json:"path"`
	Query   string  `json:"query"`
	Headers headers `json:"headers"`
	Body    string  `json:"body"`
	Hex     string  `json:"hex"`
}

type responseVector struct {
	Status  int     `json:"status"`
	Flags   int     `json:"flags"`
	AlarmAt int64   `json:"alarm_at"`
	HoldMs  int64   `json:"hold_ms"`
	Headers headers `json:"headers"`
	Body    string  `json:"body"`
	Hex     string  `json:"hex"`
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

// tp is the W3C specification's example traceparent.
const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// sixteen is the most headers a frame may carry.
func sixteen() headers {
	h := make(headers, do.MaxHeaders)
	for k := range h {
		h[k] = [2]string{fmt.Sprintf("x-%d", k), strings.Repeat("v", k)}
	}
	h[0] = [2]string{strings.Repeat("n", do.MaxHeaderName), strings.Repeat("v", do.MaxHeaderValue)}
	return h
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
			{Kind: 1, Method: "POST", Path: "/v1/t/acme/jobs", Query: "x=1", Headers: headers{}, Body: `{"kind":"echo"}`},
			{Kind: 2, Headers: headers{}},
			{Kind: 1, Method: "GET", Path: "/v1/t/acme/status", Headers: headers{
				{do.HeaderTraceparent, tp}, {do.HeaderPrincipal, do.PrincipalAdmin}}},
			{Kind: 1, Method: "PUT", Path: "/v1/t/acme/x", Headers: sixteen(), Body: "b"},
		},
		Responses: []responseVector{
			{Status: 201, Flags: 1, AlarmAt: 1764480000000, Headers: headers{}, Body: `{"id":"1"}`},
			{Status: 200, HoldMs: 20000, Headers: headers{}, Body: `{"jobs":[]}`},
			{Status: 500, Headers: headers{}},
			{Status: 400, AlarmAt: do.AlarmUnchanged, Headers: headers{}, Body: `{"code":"x","message":"y"}`},
			{Status: 405, AlarmAt: do.AlarmUnchanged, Headers: headers{
				{do.HeaderAllow, "GET, POST"}, {do.HeaderRoute, "/v1/t/{tenant}/jobs"}, {"x-a", ""}, {"x-a", "\tv ~"}},
				Body: `{"code":"method_not_allowed","message":"m"}`},
		},
		RefusedRequests: []refusedVector{
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: append(sixteen(), [2]string{"x-17", "v"})}, Error: "17 headers exceed 16"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"Traceparent", tp}}}, Error: "the name is not lower-case ASCII"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"", "v"}}}, Error: "the name is not lower-case ASCII"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"x_y", "v"}}}, Error: "the name is not lower-case ASCII"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{strings.Repeat("n", 65), "v"}}}, Error: "the name is not lower-case ASCII"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"x", strings.Repeat("v", 1025)}}}, Error: "bytes is over 1024"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"x", "a\r\nb"}}}, Error: "a control or non-ASCII byte"},
			{requestVector: requestVector{Kind: 1, Method: "GET", Path: "/", Headers: headers{{"x", "é"}}}, Error: "a control or non-ASCII byte"},
		},
		RefusedResponses: []refusedVector{
			{Status: 200, requestVector: requestVector{Headers: append(sixteen(), [2]string{"x-17", "v"})}, Error: "17 headers exceed 16"},
			{Status: 200, requestVector: requestVector{Headers: headers{{"Allow", "GET"}}}, Error: "the name is not lower-case ASCII"},
			{Status: 200, requestVector: requestVector{Headers: headers{{"x", strings.Repeat("v", 1025)}}}, Error: "bytes is over 1024"},
			{Status: 200, requestVector: requestVector{Headers: headers{{"x", "\x00"}}}, Error: "a control or non-ASCII byte"},
		},
		Traceparents: []traceparentVector{
			{tp, true},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
			{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", false},
			{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
			{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", false},
			{"00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", false},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7-01", false},
			{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", false},
			{"", false},
		},
	}
}

func (r requestVector) do() do.Request {
	return do.Request{Kind: do.RequestKind(r.Kind), Method: r.Method, Path: r.Path, Query: r.Query,
		Headers: r.Headers.do(), Body: []byte(r.Body)}
}

func (r responseVector) do() do.Response {
	return do.Response{Status: r.Status, Flags: byte(r.Flags), AlarmAt: r.AlarmAt, HoldMs: r.HoldMs,
		Headers: r.Headers.do(), Body: []byte(r.Body)}
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
		v.Requests[k].Hex = hex.EncodeToString(do.AppendRequest(nil, r.do()))
	}
	for k, r := range v.Responses {
		v.Responses[k].Hex = hex.EncodeToString(do.AppendResponse(nil, r.do()))
	}
	for k, r := range v.RefusedRequests {
		v.RefusedRequests[k].Hex = hex.EncodeToString(do.AppendRequest(nil, r.do()))
	}
	for k, r := range v.RefusedResponses {
		v.RefusedResponses[k].Hex = hex.EncodeToString(do.AppendResponse(nil, do.Response{Status: r.Status, Headers: r.Headers.do()}))
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
		require.Equal(t, r.Headers.do(), resp.Headers)
	}
	for _, r := range got.Requests {
		raw, _ := hex.DecodeString(r.Hex)
		req, err := do.DecodeRequest(raw)
		require.NoError(t, err)
		require.Equal(t, r.do(), req)
	}
	for _, r := range got.RefusedRequests {
		raw, _ := hex.DecodeString(r.Hex)
		_, err := do.DecodeRequest(raw)
		require.ErrorIs(t, err, do.ErrCodec)
		require.ErrorContains(t, err, r.Error)
	}
	for _, r := range got.RefusedResponses {
		raw, _ := hex.DecodeString(r.Hex)
		_, err := do.DecodeResponse(raw)
		require.ErrorIs(t, err, do.ErrCodec)
		require.ErrorContains(t, err, r.Error)
	}
	for _, tc := range got.Traceparents {
		require.Equal(t, tc.Valid, do.ValidTraceparent(tc.Value), tc.Value)
	}
}
