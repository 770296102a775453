//go:build js && wasm

package jsfetch

// These run under Node (GOOS=js GOARCH=wasm go test
// -exec=$(go env GOROOT)/lib/wasm/go_js_wasm_exec), whose fetch API is the
// platform's shape, with fetch functions written here that answer as the
// test needs: never, or with a body that never ends, unless aborted.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"syscall/js"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	promiseClass  = js.Global().Get("Promise")
	responseClass = js.Global().Get("Response")
	streamClass   = js.Global().Get("ReadableStream")
)

// promise is a new JS promise; start gets its resolve and reject.
func promise(start func(resolve, reject js.Value)) js.Value {
	return promiseClass.New(js.FuncOf(func(_ js.Value, args []js.Value) any {
		start(args[0], args[1])
		return nil
	}))
}

// onAbort calls f once init's signal aborts.
func onAbort(init js.Value, f func(reason js.Value)) {
	signal := init.Get("signal")
	signal.Call("addEventListener", "abort", js.FuncOf(func(js.Value, []js.Value) any {
		f(signal.Get("reason"))
		return nil
	}))
}

// never is a fetch that answers only by being aborted; aborted is told.
func never(aborted chan<- struct{}) func(string, js.Value) js.Value {
	return func(_ string, init js.Value) js.Value {
		return promise(func(_, reject js.Value) {
			onAbort(init, func(reason js.Value) {
				aborted <- struct{}{}
				reject.Invoke(reason)
			})
		})
	}
}

func TestAFetchIsAbortedWhenItsContextEnds(t *testing.T) {
	aborted := make(chan struct{}, 1)
	tr := &Transport{Fetch: never(aborted)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", "https://provider.example/pay", strings.NewReader("x"))
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-aborted:
	default:
		t.Fatal("the fetch was not aborted")
	}
}

func TestACallIsCutAtTheLimit(t *testing.T) {
	aborted := make(chan struct{}, 1)
	tr := &Transport{Fetch: never(aborted), Limit: time.Now().Add(50 * time.Millisecond)}
	req, err := http.NewRequest("GET", "https://stile.internal/v1/t/acme/claims", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrLimit, "cut, though its own context never ends")
	require.Len(t, aborted, 1)

	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrLimit, "past the limit, nothing is sent")
	require.Len(t, aborted, 1)
}

func TestARequestAndItsAnswer(t *testing.T) {
	var got js.Value
	tr := &Transport{Fetch: func(url string, init js.Value) js.Value {
		got = init
		got.Set("url", url)
		headers := js.ValueOf(map[string]any{"X-Receipt": "r-1", "Content-Length": "7"})
		return promiseClass.Call("resolve", responseClass.New("receipt", js.ValueOf(map[string]any{"status": 201, "headers": headers})))
	}}
	req, err := http.NewRequest("POST", "https://provider.example/pay?x=1", strings.NewReader(`{"amount":5}`))
	require.NoError(t, err)
	req.Header.Set("Idempotency-Key", "job-7")
	req.Header.Add("Accept", "text/plain")
	req.Header.Add("Accept", "application/json")
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)

	require.Equal(t, "https://provider.example/pay?x=1", got.Get("url").String())
	require.Equal(t, "POST", got.Get("method").String())
	require.Equal(t, "manual", got.Get("redirect").String(), "http.Client follows redirects, each counted")
	headers := js.Global().Get("Headers").New(got.Get("headers")) // as fetch reads them
	require.Equal(t, "job-7", headers.Call("get", "idempotency-key").String())
	require.Equal(t, "text/plain, application/json", headers.Call("get", "accept").String())
	sent := make([]byte, got.Get("body").Get("byteLength").Int())
	js.CopyBytesToGo(sent, got.Get("body"))
	require.Equal(t, `{"amount":5}`, string(sent))
	require.True(t, got.Get("signal").Truthy())

	require.Equal(t, 201, resp.StatusCode)
	require.Equal(t, "r-1", resp.Header.Get("X-Receipt"))
	require.Equal(t, int64(7), resp.ContentLength)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "receipt", string(b))
	require.NoError(t, resp.Body.Close())
}

func TestAReadIsAbortedWhenTheContextEnds(t *testing.T) {
	tr := &Transport{Fetch: func(_ string, init js.Value) js.Value {
		// A body that sends its first bytes and then nothing, until the
		// fetch is aborted.
		stream := streamClass.New(js.ValueOf(map[string]any{"start": js.FuncOf(func(_ js.Value, args []js.Value) any {
			c := args[0]
			first := js.Global().Get("Uint8Array").New(5)
			js.CopyBytesToJS(first, []byte("first"))
			c.Call("enqueue", first)
			onAbort(init, func(reason js.Value) { c.Call("error", reason) })
			return nil
		})}))
		return promiseClass.Call("resolve", responseClass.New(stream))
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "https://provider.example/slow", nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "first", string(b))
	require.NoError(t, resp.Body.Close())
}

func TestWhatFetchThrowsIsAnError(t *testing.T) {
	calls := 0
	tr := &Transport{Fetch: func(_ string, init js.Value) js.Value {
		js.Global().Get("Headers").New(init.Get("headers")) // as fetch reads them: a bad name throws
		calls++
		return promiseClass.Call("reject", js.Global().Get("TypeError").New("Network connection lost."))
	}}
	req, err := http.NewRequest("GET", "https://provider.example/", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrFetch)
	require.ErrorContains(t, err, "TypeError: Network connection lost.")

	req.Header["Bad Name"] = []string{"x"} // fetch refuses it: thrown, not a panic
	_, err = tr.RoundTrip(req)
	require.ErrorIs(t, err, ErrFetch)
	require.Equal(t, 1, calls)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.RoundTrip(req.WithContext(ctx))
	require.True(t, errors.Is(err, context.Canceled))
	require.Equal(t, 1, calls, "nothing is sent for a request whose context has ended")
}

// An answer read whole (Transport.Whole: the tenant's object's) reads as
// one streamed does, and is cut alike when its context ends mid-body.
func TestAnAnswerReadWhole(t *testing.T) {
	tr := &Transport{Whole: true, Fetch: func(string, js.Value) js.Value {
		headers := js.ValueOf(map[string]any{"Content-Type": "application/json"})
		return promiseClass.Call("resolve", responseClass.New(`{"jobs":[]}`, js.ValueOf(map[string]any{"status": 200, "headers": headers})))
	}}
	req, err := http.NewRequest("POST", "https://stile.internal/v1/t/acme/claims", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, `{"jobs":[]}`, string(b))
	require.NoError(t, resp.Body.Close())

	// Closed unread: its stream is cancelled, and the call is over.
	resp, err = tr.RoundTrip(req)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	_, err = resp.Body.Read(make([]byte, 1))
	require.ErrorIs(t, err, errClosed)

	cancelled := make(chan struct{}, 1)
	tr = &Transport{Whole: true, Fetch: func(_ string, init js.Value) js.Value {
		stream := streamClass.New(js.ValueOf(map[string]any{"start": js.FuncOf(func(_ js.Value, args []js.Value) any {
			c := args[0]
			first := js.Global().Get("Uint8Array").New(5)
			js.CopyBytesToJS(first, []byte("first"))
			c.Call("enqueue", first)
			onAbort(init, func(reason js.Value) {
				cancelled <- struct{}{}
				c.Call("error", reason)
			})
			return nil
		})}))
		return promiseClass.Call("resolve", responseClass.New(stream))
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, err = http.NewRequestWithContext(ctx, "GET", "https://stile.internal/v1/t/acme/jobs", nil)
	require.NoError(t, err)
	resp, err = tr.RoundTrip(req)
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Empty(t, b, "read whole or not at all")
	require.Len(t, cancelled, 1, "the fetch was aborted")
	require.NoError(t, resp.Body.Close())
}
