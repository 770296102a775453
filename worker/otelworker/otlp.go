package otelworker

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// Exporter sends spans to an OTLP/HTTP endpoint as protobuf (an
// sdktrace.SpanExporter). It is Stile's own, a few hundred lines over
// protowire: OpenTelemetry-Go's OTLP exporters link gRPC and the
// generated OTLP messages, megabytes in the edge executor. It does not
// retry: a failed export loses its spans and says so.
type Exporter struct {
	// URL is the traces endpoint, e.g. http://localhost:4318/v1/traces.
	URL string
	// Headers are sent with every export (a collector's API key).
	Headers map[string]string
	// Gzip compresses the request bodies.
	Gzip bool
	// Timeout bounds one export. Default DefaultExportTimeout.
	Timeout time.Duration
	// Client sends the exports. Default: a client over
	// http.DefaultTransport as it is at each export (at the edge, the
	// platform's fetch, counted against the invocation's subrequests).
	Client *http.Client

	stopped atomic.Bool
}

// DefaultExportTimeout is an export's time limit without
// OTEL_EXPORTER_OTLP_TIMEOUT (the specification's default).
const DefaultExportTimeout = 10 * time.Second

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// ExportSpans posts spans as one ExportTraceServiceRequest.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 || e.stopped.Load() {
		return nil
	}
	body := appendRequest(nil, spans)
	if e.Gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(body)
		zw.Close()
		body = buf.Bytes()
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExportTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otelworker: export: %w", err)
	}
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if e.Gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	hc := e.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("otelworker: export of %d spans to %s: %w", len(spans), e.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otelworker: export of %d spans to %s: %s: %s", len(spans), e.URL, resp.Status, failure(b))
	}
	if rejected, msg := partialSuccess(b); rejected > 0 || msg != "" {
		return fmt.Errorf("otelworker: the collector at %s rejected %d of %d spans: %s", e.URL, rejected, len(spans), msg)
	}
	return nil
}

// Shutdown stops the exporter: later exports send nothing.
func (e *Exporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	return nil
}

// failure is the message of a refused export's body: a google.rpc.Status
// (its message, field 2), or text.
func failure(b []byte) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			if v, n := protowire.ConsumeBytes(b); n >= 0 {
				return string(v)
			}
			break
		}
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			break
		}
		b = b[n:]
	}
	s := strings.ToValidUTF8(string(b), "?")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.Quote(s)
}

// partialSuccess reads an ExportTraceServiceResponse: its partial_success
// (1) holds rejected_spans (1) and error_message (2).
func partialSuccess(b []byte) (rejected int64, msg string) {
	ps := fieldBytes(b, 1)
	for len(ps) > 0 {
		num, typ, n := protowire.ConsumeTag(ps)
		if n < 0 {
			return
		}
		ps = ps[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, m := protowire.ConsumeVarint(ps)
			if m < 0 {
				return
			}
			rejected = int64(v)
		case num == 2 && typ == protowire.BytesType:
			v, m := protowire.ConsumeBytes(ps)
			if m < 0 {
				return
			}
			msg = string(v)
		}
		if n = protowire.ConsumeFieldValue(num, typ, ps); n < 0 {
			return
		}
		ps = ps[n:]
	}
	return
}

// fieldBytes is the last bytes field num of message b (nil if none).
func fieldBytes(b []byte, num protowire.Number) []byte {
	var got []byte
	for len(b) > 0 {
		n, typ, m := protowire.ConsumeTag(b)
		if m < 0 {
			return got
		}
		b = b[m:]
		if n == num && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return got
			}
			got = v
		}
		if m = protowire.ConsumeFieldValue(n, typ, b); m < 0 {
			return got
		}
		b = b[m:]
	}
	return got
}

// Field numbers of the OTLP messages (opentelemetry-proto:
// collector/trace/v1, trace/v1, common/v1, resource/v1).
const (
	reqResourceSpans = 1 // ExportTraceServiceRequest

	rsResource   = 1 // ResourceSpans
	rsScopeSpans = 2
	rsSchemaURL  = 3

	resAttributes = 1 // Resource

	ssScope     = 1 // ScopeSpans
	ssSpans     = 2
	ssSchemaURL = 3

	scopeName       = 1 // InstrumentationScope
	scopeVersion    = 2
	scopeAttributes = 3

	spanTraceID       = 1 // Span
	spanSpanID        = 2
	spanTraceState    = 3
	spanParentSpanID  = 4
	spanName          = 5
	spanKind          = 6
	spanStart         = 7
	spanEnd           = 8
	spanAttributes    = 9
	spanDroppedAttrs  = 10
	spanEvents        = 11
	spanDroppedEvents = 12
	spanLinks         = 13
	spanDroppedLinks  = 14
	spanStatus        = 15
	spanFlags         = 16

	eventTime       = 1 // Span.Event
	eventName       = 2
	eventAttributes = 3
	eventDropped    = 4

	linkTraceID    = 1 // Span.Link
	linkSpanID     = 2
	linkTraceState = 3
	linkAttributes = 4
	linkDropped    = 5
	linkFlags      = 6

	statusMessage = 2 // Status
	statusCode    = 3

	kvKey   = 1 // KeyValue
	kvValue = 2

	anyString = 1 // AnyValue
	anyBool   = 2
	anyInt    = 3
	anyDouble = 4
	anyArray  = 5
	anyKVList = 6
	anyBytes  = 7

	listValues = 1 // ArrayValue, KeyValueList

	// SpanFlags: the low byte is the W3C trace flags; these say whether
	// the parent (of a span) or the linked span (of a link) is remote.
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200

	// Status codes (OTLP's numbering differs from codes.Code's).
	otlpStatusOk    = 1
	otlpStatusError = 2
)

// appendRequest appends an ExportTraceServiceRequest of spans: one
// ResourceSpans per resource and within it one ScopeSpans per scope, in
// the order first seen.
func appendRequest(b []byte, spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		name, version, schema string
		attrs                 attribute.Distinct
	}
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resGroup struct {
		res    *resource.Resource
		scopes []*scopeGroup
		index  map[scopeKey]*scopeGroup
	}
	type resKey struct {
		schema string
		attrs  attribute.Distinct
	}
	var groups []*resGroup
	byRes := map[resKey]*resGroup{}
	for _, s := range spans {
		r := s.Resource()
		rk := resKey{r.SchemaURL(), r.Equivalent()}
		g := byRes[rk]
		if g == nil {
			g = &resGroup{res: r, index: map[scopeKey]*scopeGroup{}}
			byRes[rk] = g
			groups = append(groups, g)
		}
		sc := s.InstrumentationScope()
		sk := scopeKey{sc.Name, sc.Version, sc.SchemaURL, sc.Attributes.Equivalent()}
		sg := g.index[sk]
		if sg == nil {
			sg = &scopeGroup{scope: sc}
			g.index[sk] = sg
			g.scopes = append(g.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	for _, g := range groups {
		b = appendMessage(b, reqResourceSpans, func(b []byte) []byte {
			b = appendMessage(b, rsResource, func(b []byte) []byte {
				return appendAttrs(b, resAttributes, g.res.Attributes())
			})
			for _, sg := range g.scopes {
				b = appendMessage(b, rsScopeSpans, func(b []byte) []byte {
					b = appendMessage(b, ssScope, func(b []byte) []byte {
						b = appendString(b, scopeName, sg.scope.Name)
						b = appendString(b, scopeVersion, sg.scope.Version)
						return appendAttrs(b, scopeAttributes, sg.scope.Attributes.ToSlice())
					})
					for _, s := range sg.spans {
						b = appendMessage(b, ssSpans, func(b []byte) []byte { return appendSpan(b, s) })
					}
					return appendString(b, ssSchemaURL, sg.scope.SchemaURL)
				})
			}
			return appendString(b, rsSchemaURL, g.res.SchemaURL())
		})
	}
	return b
}

func appendSpan(b []byte, s sdktrace.ReadOnlySpan) []byte {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	b = appendBytes(b, spanTraceID, tid[:])
	b = appendBytes(b, spanSpanID, sid[:])
	b = appendString(b, spanTraceState, sc.TraceState().String())
	parent := s.Parent()
	if parent.SpanID().IsValid() {
		pid := parent.SpanID()
		b = appendBytes(b, spanParentSpanID, pid[:])
	}
	b = appendString(b, spanName, s.Name())
	b = appendVarint(b, spanKind, uint64(s.SpanKind()))
	b = appendTime(b, spanStart, s.StartTime())
	b = appendTime(b, spanEnd, s.EndTime())
	b = appendAttrs(b, spanAttributes, s.Attributes())
	b = appendVarint(b, spanDroppedAttrs, uint64(s.DroppedAttributes()))
	for _, e := range s.Events() {
		b = appendMessage(b, spanEvents, func(b []byte) []byte {
			b = appendTime(b, eventTime, e.Time)
			b = appendString(b, eventName, e.Name)
			b = appendAttrs(b, eventAttributes, e.Attributes)
			return appendVarint(b, eventDropped, uint64(e.DroppedAttributeCount))
		})
	}
	b = appendVarint(b, spanDroppedEvents, uint64(s.DroppedEvents()))
	for _, l := range s.Links() {
		b = appendMessage(b, spanLinks, func(b []byte) []byte {
			tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			b = appendBytes(b, linkTraceID, tid[:])
			b = appendBytes(b, linkSpanID, sid[:])
			b = appendString(b, linkTraceState, l.SpanContext.TraceState().String())
			b = appendAttrs(b, linkAttributes, l.Attributes)
			b = appendVarint(b, linkDropped, uint64(l.DroppedAttributeCount))
			return appendFixed32(b, linkFlags, flags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		})
	}
	b = appendVarint(b, spanDroppedLinks, uint64(s.DroppedLinks()))
	if st := s.Status(); st.Code != codes.Unset || st.Description != "" {
		b = appendMessage(b, spanStatus, func(b []byte) []byte {
			b = appendString(b, statusMessage, st.Description)
			switch st.Code {
			case codes.Ok:
				b = appendVarint(b, statusCode, otlpStatusOk)
			case codes.Error:
				b = appendVarint(b, statusCode, otlpStatusError)
			}
			return b
		})
	}
	return appendFixed32(b, spanFlags, flags(sc.TraceFlags(), parent.IsRemote()))
}

func flags(tf trace.TraceFlags, remote bool) uint32 {
	f := uint32(tf) | flagHasIsRemote
	if remote {
		f |= flagIsRemote
	}
	return f
}

// appendAttrs appends each attribute as a KeyValue, field num.
func appendAttrs(b []byte, num protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendMessage(b, num, func(b []byte) []byte {
			b = appendString(b, kvKey, string(kv.Key))
			return appendMessage(b, kvValue, func(b []byte) []byte { return appendValue(b, kv.Value) })
		})
	}
	return b
}

// appendValue appends the fields of an AnyValue. A oneof's field is
// written even when zero: it says which kind the value is.
func appendValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = protowire.AppendTag(b, anyBool, protowire.VarintType)
		return protowire.AppendVarint(b, protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendTag(b, anyInt, protowire.VarintType)
		return protowire.AppendVarint(b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendTag(b, anyDouble, protowire.Fixed64Type)
		return protowire.AppendFixed64(b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		b = protowire.AppendTag(b, anyString, protowire.BytesType)
		return protowire.AppendString(b, v.AsString())
	case attribute.BYTESLICE:
		b = protowire.AppendTag(b, anyBytes, protowire.BytesType)
		return protowire.AppendBytes(b, v.AsByteSlice())
	case attribute.BOOLSLICE:
		return appendArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return appendArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return appendArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return appendArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return appendArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return appendMessage(b, anyKVList, func(b []byte) []byte { return appendAttrs(b, listValues, v.AsMap()) })
	}
	return b // EMPTY: an AnyValue with no value
}

func appendArray[T any](b []byte, vs []T, value func(T) attribute.Value) []byte {
	return appendMessage(b, anyArray, func(b []byte) []byte {
		for _, v := range vs {
			b = appendMessage(b, listValues, func(b []byte) []byte { return appendValue(b, value(v)) })
		}
		return b
	})
}

// appendMessage appends field num holding the message that body appends:
// the body is written in place, then moved up to make room for its
// length.
func appendMessage(b []byte, num protowire.Number, body func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	start := len(b)
	b = body(b)
	n := len(b) - start
	w := protowire.SizeVarint(uint64(n))
	b = slices.Grow(b, w)[:len(b)+w]
	copy(b[start+w:], b[start:start+n])
	protowire.AppendVarint(b[start:start], uint64(n))
	return b
}

// The scalar appenders leave out a zero value, as proto3 does.

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendBytes(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

func appendTime(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, uint64(t.UnixNano()))
}
