//go:build js && wasm

package jsfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall/js"
	"time"
)

var (
	abortController = js.Global().Get("AbortController")
	arrayClass      = js.Global().Get("Array")
	jsonObject      = js.Global().Get("JSON")
	stringOf        = js.Global().Get("String")
	uint8Array      = js.Global().Get("Uint8Array")
	// ignore handles a promise nobody waits for (a cancelled body's), so
	// that its rejection is not reported as unhandled.
	ignore = js.FuncOf(func(js.Value, []js.Value) any { return nil })
)

// settleWait bounds the wait for an aborted fetch or read to settle. It
// settles at once where the signal is honoured; the wait keeps its
// callbacks from outliving the Go program, which ends with the
// invocation, without trusting the platform to honour it.
const settleWait = 250 * time.Millisecond

var errClosed = errors.New("jsfetch: read of a closed body")

// Transport is an http.RoundTripper over a fetch function. A request's
// context ending aborts its fetch, also while the response's body is
// read. Redirects are answered, not followed (http.Client follows them,
// each a request of its own, as Workers counts them).
type Transport struct {
	// Fetch calls fetch(url, init) and returns its promise of a Response.
	Fetch func(url string, init js.Value) js.Value
	// Limit, if not zero, cuts every call still going on then, whatever
	// its context (cause ErrLimit).
	Limit time.Time
	// Whole reads an answer's body in one call (arrayBuffer), not chunk
	// by chunk from its stream, each chunk a call across to JavaScript
	// and a wait for a promise: for answers known to be small (the
	// tenant's object's). A handler's provider may stream a large one.
	Whole bool
}

// Platform is a Transport over the platform's fetch. It is called as a
// function: Workers refuses the global scope as its this ("Illegal
// invocation"), which is how Go's own js transport calls it.
func Platform() *Transport {
	return &Transport{Fetch: func(url string, init js.Value) js.Value { return js.Global().Get("fetch").Invoke(url, init) }}
}

// On is a Transport over obj's fetch method: a service binding's or a
// Durable Object stub's (the global scope's is Platform).
func On(obj js.Value) *Transport {
	return &Transport{Fetch: func(url string, init js.Value) js.Value { return obj.Call("fetch", url, init) }}
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	sent, err := requestBody(r)
	if err != nil {
		return nil, err
	}
	ctx, cancel := r.Context(), context.CancelFunc(func() {})
	if !t.Limit.IsZero() {
		ctx, cancel = context.WithDeadlineCause(ctx, t.Limit, ErrLimit)
	}
	c := &call{r: r, ctx: ctx, whole: t.Whole}
	if ctx.Err() != nil {
		cancel()
		return nil, c.cut()
	}
	if err := catch(func() { c.controller = abortController.New() }); err != nil {
		cancel()
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.abort)
	c.release = sync.OnceFunc(func() { stop(); cancel() })
	resp, err := c.send(t.Fetch, sent)
	if err != nil {
		c.release()
		return nil, err
	}
	return resp, nil
}

// call is one fetch, until its response's body is read or closed.
type call struct {
	r          *http.Request
	ctx        context.Context // the request's, or cut at the Transport's Limit
	controller js.Value        // its AbortController
	release    func()          // stops watching ctx, once the call is over
	whole      bool            // Transport.Whole
}

func (c *call) abort() { catch(func() { c.controller.Call("abort") }) }

// cut is the error of a call whose context ended: the request's own
// error, or why the Transport cut it.
func (c *call) cut() error {
	if err := c.r.Context().Err(); err != nil {
		return err
	}
	return context.Cause(c.ctx)
}

func (c *call) send(fetch func(string, js.Value) js.Value, sent []byte) (*http.Response, error) {
	var promise js.Value
	err := catch(func() {
		init := jsonObject.Call("parse", string(fetchInit(c.r)))
		if len(sent) > 0 {
			b := uint8Array.New(len(sent))
			js.CopyBytesToJS(b, sent)
			init.Set("body", b)
		}
		init.Set("signal", c.controller.Get("signal"))
		promise = fetch(c.r.URL.String(), init)
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", c.r.Method, c.r.URL.Redacted(), err)
	}
	v, err := c.await(promise)
	if err != nil {
		return nil, err
	}
	var a answer
	var stream, headers js.Value
	err = catch(func() {
		a = answer{status: v.Get("status").Int(), statusText: v.Get("statusText").String()}
		headers = jsonObject.Call("stringify", arrayClass.Call("from", v.Get("headers")))
		stream = v.Get("body")
		if stream.Type() == js.TypeObject && !c.whole {
			stream = stream.Call("getReader")
		}
	})
	if err == nil {
		a.header, err = goHeader(headers.String())
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: the answer: %w", c.r.Method, c.r.URL.Redacted(), err)
	}
	var rb io.ReadCloser = http.NoBody
	switch {
	case stream.Type() == js.TypeObject && c.whole:
		rb = &body{c: c, answer: v, stream: stream}
	case stream.Type() == js.TypeObject:
		rb = &body{c: c, reader: stream}
	default:
		c.release() // no body: the call is over
	}
	resp, err := response(c.r, a, rb)
	if err != nil {
		rb.Close()
		return nil, err
	}
	return resp, nil
}

type settled struct {
	v   js.Value
	err error
}

// await waits for a promise of the call: its value, or why it was
// rejected, or the call's cut once its context ends (the fetch is aborted
// then).
func (c *call) await(p js.Value) (js.Value, error) {
	ch := make(chan settled, 1)
	var ok, fail js.Func
	ok = js.FuncOf(func(_ js.Value, args []js.Value) any {
		ok.Release()
		fail.Release()
		ch <- settled{v: args[0]}
		return nil
	})
	fail = js.FuncOf(func(_ js.Value, args []js.Value) any {
		ok.Release()
		fail.Release()
		ch <- settled{err: rejection(args[0])}
		return nil
	})
	if err := catch(func() { p.Call("then", ok, fail) }); err != nil {
		ok.Release()
		fail.Release()
		return js.Value{}, err
	}
	select {
	case s := <-ch:
		if s.err != nil && c.ctx.Err() != nil {
			return js.Value{}, c.cut() // rejected because it was aborted
		}
		return s.v, s.err
	case <-c.ctx.Done():
	}
	c.abort()
	select {
	case <-ch:
	case <-time.After(settleWait):
	}
	return js.Value{}, c.cut()
}

// body reads a response's body stream, aborting the call when its context
// ends during a read: chunk by chunk from the stream's reader, or whole
// (Transport.Whole) from the answer.
type body struct {
	c       *call
	reader  js.Value // the stream's reader, or
	answer  js.Value // the Response whose body is read whole, and
	stream  js.Value // its body, cancelled if it is closed unread
	pending []byte

	mu  sync.Mutex
	err error // sticky: io.EOF, a failure, or errClosed
}

func (b *body) Read(p []byte) (int, error) {
	for len(b.pending) == 0 {
		if err := b.failed(); err != nil {
			return 0, err
		}
		if b.c.whole {
			b.readWhole()
			continue
		}
		var read js.Value
		if err := catch(func() { read = b.reader.Call("read") }); err != nil {
			b.end(err)
			continue
		}
		v, err := b.c.await(read)
		switch {
		case err != nil:
			b.end(err)
		case v.Get("done").Bool():
			b.end(io.EOF)
		default:
			chunk := v.Get("value")
			b.pending = make([]byte, chunk.Get("byteLength").Int())
			js.CopyBytesToGo(b.pending, chunk)
		}
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// readWhole reads the answer's whole body into pending, and ends the body
// there.
func (b *body) readWhole() {
	var read js.Value
	if err := catch(func() { read = b.answer.Call("arrayBuffer") }); err != nil {
		b.end(err)
		return
	}
	v, err := b.c.await(read)
	if err == nil {
		err = catch(func() {
			b.pending = make([]byte, v.Get("byteLength").Int())
			js.CopyBytesToGo(b.pending, uint8Array.New(v))
		})
	}
	if err == nil {
		err = io.EOF
	}
	b.end(err)
}

// Close cancels what is left of the body.
func (b *body) Close() error {
	b.mu.Lock()
	open := b.err == nil
	if open {
		b.err = errClosed
	}
	b.mu.Unlock()
	if open {
		cancel := b.reader
		if b.c.whole {
			cancel = b.stream
		}
		catch(func() { cancel.Call("cancel").Call("then", ignore, ignore) })
		b.c.release()
	}
	return nil
}

func (b *body) failed() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// end ends the body with err (the first error stays) and the call.
func (b *body) end(err error) {
	b.mu.Lock()
	if b.err == nil {
		b.err = err
	}
	b.mu.Unlock()
	b.c.release()
}

// rejection is the error of what a promise was rejected with.
func rejection(v js.Value) error {
	msg := stringOf.Invoke(v).String()
	if v.Type() == js.TypeObject {
		if cause := v.Get("cause"); !cause.IsUndefined() {
			msg += ": " + stringOf.Invoke(cause).String()
		}
	}
	return fmt.Errorf("%w: %s", ErrFetch, msg)
}

// catch runs f, turning what JavaScript throws into an error.
func catch(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(js.Error)
			if !ok {
				panic(p)
			}
			err = rejection(e.Value)
		}
	}()
	f()
	return nil
}
