// Package jsfetch is an http.RoundTripper over the platform's fetch (or a
// Durable Object stub's) for GOOS=js: a request's context reaches the
// fetch as an AbortController's signal, so a call whose context ends is
// aborted, also while its response's body is read. syumai/workers' own
// transport and stub.Fetch ignore the context: a handler stuck in a
// call that never answers was cut at its time limit in name only, and
// held its invocation, its job and its push until they expired.
//
// This file holds what does not need the platform, so that it builds
// and is tested natively; jsfetch_js.go is the glue to fetch.
package jsfetch

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/stile-run/stile/internal/jsonwire"
)

// ErrLimit is the cause of a call cut at the Transport's Limit.
var ErrLimit = errors.New("the invocation's time for calls is over")

// ErrFetch wraps what the platform's fetch threw or rejected with.
var ErrFetch = errors.New("fetch failed")

// requestBody reads and closes what a request sends: nothing for GET and
// HEAD, which fetch refuses to send a body with. The whole body is read
// first: a fetch streaming it from Go would call back into Go for every
// chunk, and what handlers send providers is small.
func requestBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	defer r.Body.Close()
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("read the body of %s %s: %w", r.Method, r.URL.Redacted(), err)
	}
	return b, nil
}

// fetchInit is fetch's init for r, but its body and signal, as JSON:
// JSON.parse makes it in one call across to JavaScript, where setting its
// members and appending each header were a call each. The headers are
// pairs, a repeated header's values each a pair, as Headers appends them;
// redirects are answered, not followed.
func fetchInit(r *http.Request) []byte {
	b := append(make([]byte, 0, 256), `{"method":`...)
	b = jsonwire.AppendString(b, r.Method)
	b = append(b, `,"redirect":"manual","headers":[`...)
	n := 0
	for k, vs := range r.Header {
		for _, v := range vs {
			if n++; n > 1 {
				b = append(b, ',')
			}
			b = jsonwire.AppendString(append(b, '['), k)
			b = append(jsonwire.AppendString(append(b, ','), v), ']')
		}
	}
	return append(b, "]}"...)
}

// goHeader reads an answer's headers from JSON.stringify(Array.from(the
// answer's Headers)), pairs of a name and its value, made in two calls
// across to JavaScript where iterating them took several a header.
func goHeader(pairs string) (http.Header, error) {
	out := http.Header{}
	err := jsonwire.DecodeBody([]byte(pairs), func(r *jsonwire.Reader) error {
		return jsonwire.DecodeArray(r, func(int) error {
			kv, err := jsonwire.StringArray(r, "header")
			if err == nil && len(kv) != 2 {
				err = fmt.Errorf("a header is %d strings, not a name and a value", len(kv))
			}
			if err == nil {
				out.Add(kv[0], kv[1])
			}
			return err
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the headers: %w", err)
	}
	return out, nil
}

// answer is the head of what fetch answered.
type answer struct {
	status     int
	statusText string
	header     http.Header
}

// response is the http.Response of an answer to r, with body.
func response(r *http.Request, a answer, body io.ReadCloser) (*http.Response, error) {
	text := a.statusText
	if text == "" {
		text = http.StatusText(a.status)
	}
	resp := &http.Response{Status: strconv.Itoa(a.status) + " " + text, StatusCode: a.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: a.header, Body: body, ContentLength: -1, Request: r}
	if cl := a.header.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s %s: the answer's Content-Length is %q", r.Method, r.URL.Redacted(), cl)
		}
		resp.ContentLength = n
	}
	if decodedByFetch(a.header.Get("Content-Encoding")) {
		// fetch hands over the body decoded, and keeps the headers of the
		// encoded one: what the body is now is unknown in length.
		a.header.Del("Content-Encoding")
		a.header.Del("Content-Length")
		resp.ContentLength, resp.Uncompressed = -1, true
	}
	return resp, nil
}

// decodedByFetch says fetch decodes a body of this content encoding
// itself: workerd decodes gzip and br (and keeps the headers), not x-gzip.
func decodedByFetch(encoding string) bool {
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "gzip", "br":
		return true
	}
	return false
}
