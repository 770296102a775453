package jsfetch

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// closed notes that a body was closed.
type closed struct {
	io.Reader
	closed bool
}

func (c *closed) Close() error { c.closed = true; return nil }

func TestARequestsBodyIsReadWhole(t *testing.T) {
	t.Parallel()
	body := &closed{Reader: strings.NewReader(`{"amount":5}`)}
	r := httptest.NewRequest("POST", "https://provider.example/pay", nil)
	r.Body = body
	b, err := requestBody(r)
	require.NoError(t, err)
	require.Equal(t, `{"amount":5}`, string(b))
	require.True(t, body.closed)

	for _, method := range []string{"GET", "HEAD"} {
		body := &closed{Reader: strings.NewReader("ignored")}
		r := httptest.NewRequest(method, "https://provider.example/", nil)
		r.Body = body
		b, err := requestBody(r)
		require.NoError(t, err)
		require.Nil(t, b, "fetch sends no body with %s", method)
		require.True(t, body.closed)
	}

	b, err = requestBody(httptest.NewRequest("POST", "https://provider.example/", nil))
	require.NoError(t, err)
	require.Nil(t, b)

	r = httptest.NewRequest("POST", "https://provider.example/", nil)
	r.Body = io.NopCloser(iotestErr{})
	_, err = requestBody(r)
	require.ErrorContains(t, err, "read the body of POST https://provider.example/: disk on fire")
}

type iotestErr struct{}

func (iotestErr) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestAnAnswerBecomesAResponse(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "https://provider.example/receipt", nil)
	body := io.NopCloser(strings.NewReader("receipt-1"))
	resp, err := response(r, answer{status: 201, statusText: "Created", header: http.Header{"Content-Length": {"9"}}}, body)
	require.NoError(t, err)
	require.Equal(t, "201 Created", resp.Status)
	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, int64(9), resp.ContentLength)
	require.Same(t, r, resp.Request)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "receipt-1", string(b))

	resp, err = response(r, answer{status: 404, header: http.Header{}}, http.NoBody)
	require.NoError(t, err)
	require.Equal(t, "404 Not Found", resp.Status, "a status text from Go when fetch gave none (HTTP/2)")
	require.Equal(t, int64(-1), resp.ContentLength, "unknown")

	_, err = response(r, answer{status: 200, header: http.Header{"Content-Length": {"-1"}}}, http.NoBody)
	require.ErrorContains(t, err, `the answer's Content-Length is "-1"`)
}

func TestABodyFetchDecodedLosesItsEncodingHeaders(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "https://provider.example/", nil)
	for _, enc := range []string{"gzip", "br", "GZip"} {
		h := http.Header{"Content-Encoding": {enc}, "Content-Length": {"30"}, "Content-Type": {"text/plain"}}
		resp, err := response(r, answer{status: 200, header: h}, http.NoBody)
		require.NoError(t, err)
		require.True(t, resp.Uncompressed, enc)
		require.Equal(t, int64(-1), resp.ContentLength, "the decoded body's length is unknown")
		require.Equal(t, http.Header{"Content-Type": {"text/plain"}}, resp.Header)
	}
	resp, err := response(r, answer{status: 200, header: http.Header{"Content-Encoding": {"zstd"}, "Content-Length": {"30"}}}, http.NoBody)
	require.NoError(t, err)
	require.False(t, resp.Uncompressed, "an encoding fetch leaves alone is the caller's")
	require.Equal(t, int64(30), resp.ContentLength)
}

// fetch's init carries the method and every header value, a repeated
// header's too, as JSON.parse reads it; the answer's headers come back from
// their pairs.
func TestHeadersCrossAsJSON(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "https://provider.example/pay", nil)
	r.Header = http.Header{"Accept": {"text/plain", "application/json"}, "Idempotency-Key": {"job \"7\"\u2028é"}}
	var init struct {
		Method, Redirect string
		Headers          [][]string
	}
	require.NoError(t, json.Unmarshal(fetchInit(r), &init))
	require.Equal(t, "POST", init.Method)
	require.Equal(t, "manual", init.Redirect)
	require.ElementsMatch(t, [][]string{{"Accept", "text/plain"}, {"Accept", "application/json"}, {"Idempotency-Key", "job \"7\"\u2028é"}}, init.Headers)
	require.JSONEq(t, `{"method":"GET","redirect":"manual","headers":[]}`, string(fetchInit(httptest.NewRequest("GET", "https://provider.example/", nil))))

	h, err := goHeader(`[["content-type","application/json"],["set-cookie","a=1"],["set-cookie","b=2"],["x-receipt","\"q\""]]`)
	require.NoError(t, err)
	require.Equal(t, http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}, "X-Receipt": {`"q"`}}, h)
	h, err = goHeader(`[]`)
	require.NoError(t, err)
	require.Empty(t, h)
	for _, bad := range []string{``, `{}`, `[["a"]]`, `[["a","b","c"]]`, `[[1,"b"]]`, `[["a","b"]] x`} {
		_, err := goHeader(bad)
		require.ErrorContains(t, err, "read the headers", bad)
	}
}
