// Package otlptest is a fake OpenTelemetry collector for tests: an
// OTLP/HTTP receiver on a loopback port that decodes each export with the
// generated OTLP messages (go.opentelemetry.io/proto/otlp, which only
// tests link) and keeps its spans.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, with its resource's service.name and its
// scope's name.
type Span struct {
	*tracepb.Span
	Service string
	Scope   string
}

// TraceID and SpanID are the span's ids in hex; ParentID is its parent's
// ("" for a root).
func (s Span) TraceID() string  { return hex.EncodeToString(s.Span.TraceId) }
func (s Span) SpanID() string   { return hex.EncodeToString(s.Span.SpanId) }
func (s Span) ParentID() string { return hex.EncodeToString(s.Span.ParentSpanId) }

// Attrs are the span's attributes, as text.
func (s Span) Attrs() map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
		default:
			m[kv.Key] = fmt.Sprint(kv.GetValue())
		}
	}
	return m
}

// Receiver is the fake collector. Its URL is the base an
// OTEL_EXPORTER_OTLP_ENDPOINT names; exports go to URL + "/v1/traces".
type Receiver struct {
	URL string

	srv      *httptest.Server
	mu       sync.Mutex
	spans    []Span
	requests int
	refused  []string
}

// New starts a receiver; Close stops it.
func New() *Receiver {
	r := &Receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err == nil && req.Header.Get("Content-Encoding") == "gzip" {
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(body)); err == nil {
			body, err = io.ReadAll(zr)
		}
	}
	var d tracepb.TracesData // the same fields as ExportTraceServiceRequest
	switch {
	case err != nil:
	case req.Method != http.MethodPost || req.URL.Path != "/v1/traces":
		err = fmt.Errorf("%s %s: the traces endpoint is POST /v1/traces", req.Method, req.URL.Path)
	case req.Header.Get("Content-Type") != "application/x-protobuf":
		err = fmt.Errorf("Content-Type %q: want application/x-protobuf", req.Header.Get("Content-Type"))
	default:
		err = proto.Unmarshal(body, &d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if err != nil {
		r.refused = append(r.refused, err.Error())
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, rs := range d.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, Span{Span: s, Service: service, Scope: ss.GetScope().GetName()})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is how many exports arrived, and the errors of those it
// refused (a wrong path, content type or body).
func (r *Receiver) Requests() (n int, refused []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]string(nil), r.refused...)
}

// Wait waits up to timeout for a span that match accepts, and returns it.
func (r *Receiver) Wait(tb testing.TB, timeout time.Duration, what string, match func(Span) bool) Span {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range r.Spans() {
			if match(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			n, refused := r.Requests()
			var names []string
			for _, s := range r.Spans() {
				names = append(names, s.Name)
			}
			tb.Fatalf("no span %s within %s: %d exports (refused: %q), spans %q", what, timeout, n, refused, names)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
