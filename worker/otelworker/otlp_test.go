package otelworker_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/stile-run/stile/worker/otelworker"
)

// The spans of the encoding tests: "charge", a consumer span of scope
// shop (a remote parent, every kind of attribute, an event, a link, an
// error status), and "audit", a root span of scope audit.
var (
	t0        = time.Unix(1_700_000_000, 123_456_789)
	parentTID = trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
	parentSID = trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}
	linkTID   = trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	linkSID   = trace.SpanID{8, 7, 6, 5, 4, 3, 2, 1}
)

const schema = "https://opentelemetry.io/schemas/1.26.0"

func encodedSpans(t *testing.T) []sdktrace.ReadOnlySpan {
	t.Helper()
	mem := tracetest.NewInMemoryExporter()
	res := resource.NewWithAttributes(schema, attribute.String("service.name", "shop"), attribute.Int("host.cores", 2))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem), sdktrace.WithResource(res))
	ts, err := trace.ParseTraceState("vendor=abc")
	require.NoError(t, err)
	parent := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: parentTID, SpanID: parentSID, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true}))
	link := trace.NewSpanContext(trace.SpanContextConfig{TraceID: linkTID, SpanID: linkSID, TraceFlags: trace.FlagsSampled, Remote: true})
	shop := tp.Tracer("shop", trace.WithInstrumentationVersion("1.2.3"), trace.WithSchemaURL(schema),
		trace.WithInstrumentationAttributes(attribute.String("team", "pay")))
	_, charge := shop.Start(parent, "charge", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(t0),
		trace.WithLinks(trace.Link{SpanContext: link, Attributes: []attribute.KeyValue{attribute.String("why", "retry of")}}),
		trace.WithAttributes(
			attribute.String("s", "ada"),
			attribute.String("empty", ""),
			attribute.Bool("b", true),
			attribute.Bool("f", false),
			attribute.Int64("i", -42),
			attribute.Int64("zero", 0),
			attribute.Float64("d", 2.5),
			attribute.BoolSlice("bs", []bool{true, false}),
			attribute.Int64Slice("is", []int64{1, -2}),
			attribute.Float64Slice("ds", []float64{0.5, math.Inf(1)}),
			attribute.StringSlice("ss", []string{"a", ""}),
			attribute.ByteSlice("by", []byte{0, 1, 2}),
			attribute.Slice("mixed", attribute.StringValue("x"), attribute.Int64Value(7)),
			attribute.Map("m", attribute.String("k", "v"), attribute.Bool("ok", true)),
		))
	charge.AddEvent("declined", trace.WithTimestamp(t0.Add(time.Millisecond)), trace.WithAttributes(attribute.String("code", "card_declined")))
	charge.SetStatus(codes.Error, "declined")
	charge.End(trace.WithTimestamp(t0.Add(2 * time.Millisecond)))
	_, audit := tp.Tracer("audit").Start(context.Background(), "audit", trace.WithTimestamp(t0))
	audit.End(trace.WithTimestamp(t0.Add(time.Second)))
	spans := mem.GetSpans().Snapshots()
	require.Len(t, spans, 2)
	return spans
}

// receiver is a fake OTLP/HTTP collector: it keeps each request.
type receiver struct {
	mu     sync.Mutex
	reqs   []*http.Request
	bodies [][]byte
	status int
	answer []byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err == nil {
			b, _ = io.ReadAll(zr)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs, r.bodies = append(r.reqs, req), append(r.bodies, b)
	w.Header().Set("Content-Type", "application/x-protobuf")
	if r.status != 0 {
		w.WriteHeader(r.status)
	}
	w.Write(r.answer)
}

func export(t *testing.T, e *otelworker.Exporter, r *receiver) []byte {
	t.Helper()
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	e.URL = srv.URL + "/v1/traces"
	require.NoError(t, e.ExportSpans(context.Background(), encodedSpans(t)))
	require.Len(t, r.bodies, 1, "one request for the batch")
	return r.bodies[0]
}

// field is one decoded protobuf field: v for varints and fixed-width
// values, b for length-delimited ones.
type field struct {
	typ protowire.Type
	v   uint64
	b   []byte
}

// fields decodes a protobuf message with protowire alone.
func fields(t *testing.T, b []byte) map[protowire.Number][]field {
	t.Helper()
	m := map[protowire.Number][]field{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		require.GreaterOrEqual(t, n, 0, "a tag")
		b = b[n:]
		f := field{typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(b)
		default:
			t.Fatalf("field %d has wire type %d", num, typ)
		}
		require.GreaterOrEqual(t, n, 0, "the value of field %d", num)
		b = b[n:]
		m[num] = append(m[num], f)
	}
	return m
}

// one is the single field num of m, of type typ.
func one(t *testing.T, m map[protowire.Number][]field, num protowire.Number, typ protowire.Type) field {
	t.Helper()
	require.Len(t, m[num], 1, "field %d once", num)
	require.Equal(t, typ, m[num][0].typ, "field %d's wire type", num)
	return m[num][0]
}

func msg(t *testing.T, m map[protowire.Number][]field, num protowire.Number) map[protowire.Number][]field {
	t.Helper()
	return fields(t, one(t, m, num, protowire.BytesType).b)
}

func str(t *testing.T, m map[protowire.Number][]field, num protowire.Number) string {
	t.Helper()
	return string(one(t, m, num, protowire.BytesType).b)
}

// anyValue decodes an AnyValue into a Go value.
func anyValue(t *testing.T, b []byte) any {
	t.Helper()
	m := fields(t, b)
	require.Len(t, m, 1, "an AnyValue holds one value: %v", m)
	for num, fs := range m {
		require.Len(t, fs, 1)
		switch f := fs[0]; num {
		case 1:
			return string(f.b)
		case 2:
			require.Equal(t, protowire.VarintType, f.typ)
			return protowire.DecodeBool(f.v)
		case 3:
			require.Equal(t, protowire.VarintType, f.typ)
			return int64(f.v)
		case 4:
			require.Equal(t, protowire.Fixed64Type, f.typ)
			return math.Float64frombits(f.v)
		case 5:
			var vs []any
			for _, v := range fields(t, f.b)[1] {
				vs = append(vs, anyValue(t, v.b))
			}
			return vs
		case 6:
			return attrs(t, fields(t, f.b)[1])
		case 7:
			return f.b
		default:
			t.Fatalf("AnyValue field %d", num)
		}
	}
	return nil
}

// attrs decodes repeated KeyValues.
func attrs(t *testing.T, kvs []field) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, kv := range kvs {
		m := fields(t, kv.b)
		require.Len(t, m, 2, "a KeyValue is a key and a value")
		out[str(t, m, 1)] = anyValue(t, one(t, m, 2, protowire.BytesType).b)
	}
	return out
}

// TestExporterEncodesEveryField decodes what the exporter sent with
// protowire alone, against the OTLP field numbers, and checks each field.
func TestExporterEncodesEveryField(t *testing.T) {
	r := &receiver{}
	body := export(t, &otelworker.Exporter{Headers: map[string]string{"x-api-key": "k1"}}, r)
	req := r.reqs[0]
	require.Equal(t, http.MethodPost, req.Method)
	require.Equal(t, "/v1/traces", req.URL.Path)
	require.Equal(t, "application/x-protobuf", req.Header.Get("Content-Type"))
	require.Equal(t, "k1", req.Header.Get("x-api-key"))

	request := fields(t, body)
	require.Len(t, request, 1, "ExportTraceServiceRequest has resource_spans only")
	require.Len(t, request[1], 1, "one resource")
	rs := fields(t, request[1][0].b)
	require.Equal(t, schema, str(t, rs, 3), "the resource's schema url")
	res := msg(t, rs, 1)
	require.Equal(t, map[string]any{"service.name": "shop", "host.cores": int64(2)}, attrs(t, res[1]))
	require.Len(t, rs[2], 2, "two scopes")

	// Scope shop and its span, charge.
	ss := fields(t, rs[2][0].b)
	require.Equal(t, schema, str(t, ss, 3))
	scope := msg(t, ss, 1)
	require.Equal(t, "shop", str(t, scope, 1))
	require.Equal(t, "1.2.3", str(t, scope, 2))
	require.Equal(t, map[string]any{"team": "pay"}, attrs(t, scope[3]))
	require.Len(t, ss[2], 1)
	span := fields(t, ss[2][0].b)
	traceID := one(t, span, 1, protowire.BytesType).b
	require.Equal(t, parentTID[:], traceID, "the parent's trace")
	require.Len(t, one(t, span, 2, protowire.BytesType).b, 8)
	require.Equal(t, "vendor=abc", str(t, span, 3), "trace state")
	require.Equal(t, parentSID[:], one(t, span, 4, protowire.BytesType).b, "parent span id")
	require.Equal(t, uint64(0x01|0x100|0x200), one(t, span, 16, protowire.Fixed32Type).v, "sampled, and the parent is known to be remote")
	require.Equal(t, "charge", str(t, span, 5))
	require.Equal(t, uint64(5), one(t, span, 6, protowire.VarintType).v, "SPAN_KIND_CONSUMER")
	require.Equal(t, uint64(t0.UnixNano()), one(t, span, 7, protowire.Fixed64Type).v)
	require.Equal(t, uint64(t0.Add(2*time.Millisecond).UnixNano()), one(t, span, 8, protowire.Fixed64Type).v)
	require.Equal(t, map[string]any{
		"s": "ada", "empty": "", "b": true, "f": false, "i": int64(-42), "zero": int64(0), "d": 2.5,
		"bs": []any{true, false}, "is": []any{int64(1), int64(-2)}, "ds": []any{0.5, math.Inf(1)}, "ss": []any{"a", ""},
		"by": []byte{0, 1, 2}, "mixed": []any{"x", int64(7)}, "m": map[string]any{"k": "v", "ok": true},
	}, attrs(t, span[9]))
	require.Len(t, span[11], 1, "one event")
	ev := fields(t, span[11][0].b)
	require.Equal(t, uint64(t0.Add(time.Millisecond).UnixNano()), one(t, ev, 1, protowire.Fixed64Type).v)
	require.Equal(t, "declined", str(t, ev, 2))
	require.Equal(t, map[string]any{"code": "card_declined"}, attrs(t, ev[3]))
	require.Len(t, span[13], 1, "one link")
	ln := fields(t, span[13][0].b)
	require.Equal(t, linkTID[:], one(t, ln, 1, protowire.BytesType).b)
	require.Equal(t, linkSID[:], one(t, ln, 2, protowire.BytesType).b)
	require.Equal(t, map[string]any{"why": "retry of"}, attrs(t, ln[4]))
	require.Equal(t, uint64(0x01|0x100|0x200), one(t, ln, 6, protowire.Fixed32Type).v, "the linked span is remote")
	status := msg(t, span, 15)
	require.Equal(t, "declined", str(t, status, 2))
	require.Equal(t, uint64(2), one(t, status, 3, protowire.VarintType).v, "STATUS_CODE_ERROR")
	for _, n := range []protowire.Number{10, 12, 14} {
		require.Empty(t, span[n], "no dropped counts: field %d", n)
	}
	require.Len(t, span, 13, "every field but the three dropped counts")

	// Scope audit and its root span.
	ss = fields(t, rs[2][1].b)
	require.Equal(t, "audit", str(t, msg(t, ss, 1), 1))
	span = fields(t, ss[2][0].b)
	require.NotEqual(t, traceID, one(t, span, 1, protowire.BytesType).b, "a trace of its own")
	require.Empty(t, span[4], "no parent")
	require.Empty(t, span[3], "no trace state")
	require.Equal(t, uint64(0x01|0x100), one(t, span, 16, protowire.Fixed32Type).v, "sampled, with no remote parent")
	require.Equal(t, uint64(1), one(t, span, 6, protowire.VarintType).v, "SPAN_KIND_INTERNAL, the SDK's default")
	require.Empty(t, span[15], "no status")
	require.Equal(t, uint64(t0.Add(time.Second).UnixNano()), one(t, span, 8, protowire.Fixed64Type).v)
}

func kv(k string, v *commonpb.AnyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: v}
}
func sv(s string) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
}
func iv(i int64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}}
}
func bv(b bool) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}}
}
func dv(d float64) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: d}}
}
func av(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
}

// TestExporterMatchesTheOTLPProtos decodes what the exporter sent with
// the generated OTLP messages (a test-only dependency) and compares it with
// the message expected. ExportTraceServiceRequest and TracesData have the
// same fields.
func TestExporterMatchesTheOTLPProtos(t *testing.T) {
	body := export(t, &otelworker.Exporter{Gzip: true}, &receiver{})
	var got tracepb.TracesData
	require.NoError(t, proto.Unmarshal(body, &got))
	spans := got.ResourceSpans[0].ScopeSpans
	require.Len(t, spans, 2)
	charge, audit := spans[0].Spans[0], spans[1].Spans[0]
	nano := func(t time.Time) uint64 { return uint64(t.UnixNano()) }
	want := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("host.cores", iv(2)), kv("service.name", sv("shop"))}},
		SchemaUrl: schema,
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope:     &commonpb.InstrumentationScope{Name: "shop", Version: "1.2.3", Attributes: []*commonpb.KeyValue{kv("team", sv("pay"))}},
			SchemaUrl: schema,
			Spans: []*tracepb.Span{{
				TraceId: parentTID[:], SpanId: charge.SpanId, TraceState: "vendor=abc", ParentSpanId: parentSID[:], Flags: 0x301,
				Name: "charge", Kind: tracepb.Span_SPAN_KIND_CONSUMER,
				StartTimeUnixNano: nano(t0), EndTimeUnixNano: nano(t0.Add(2 * time.Millisecond)),
				Attributes: []*commonpb.KeyValue{
					kv("s", sv("ada")), kv("empty", sv("")), kv("b", bv(true)), kv("f", bv(false)), kv("i", iv(-42)), kv("zero", iv(0)),
					kv("d", dv(2.5)), kv("bs", av(bv(true), bv(false))), kv("is", av(iv(1), iv(-2))), kv("ds", av(dv(0.5), dv(math.Inf(1)))),
					kv("ss", av(sv("a"), sv(""))), kv("by", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 2}}}),
					kv("mixed", av(sv("x"), iv(7))),
					kv("m", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
						Values: []*commonpb.KeyValue{kv("k", sv("v")), kv("ok", bv(true))}}}}),
				},
				Events: []*tracepb.Span_Event{{TimeUnixNano: nano(t0.Add(time.Millisecond)), Name: "declined",
					Attributes: []*commonpb.KeyValue{kv("code", sv("card_declined"))}}},
				Links: []*tracepb.Span_Link{{TraceId: linkTID[:], SpanId: linkSID[:], Flags: 0x301,
					Attributes: []*commonpb.KeyValue{kv("why", sv("retry of"))}}},
				Status: &tracepb.Status{Message: "declined", Code: tracepb.Status_STATUS_CODE_ERROR},
			}},
		}, {
			Scope: &commonpb.InstrumentationScope{Name: "audit"},
			Spans: []*tracepb.Span{{
				TraceId: audit.TraceId, SpanId: audit.SpanId, Flags: 0x101, Name: "audit", Kind: tracepb.Span_SPAN_KIND_INTERNAL,
				StartTimeUnixNano: nano(t0), EndTimeUnixNano: nano(t0.Add(time.Second)),
			}},
		}},
	}}}
	require.True(t, proto.Equal(want, &got), "got:\n%v\nwant:\n%v", &got, want)
	require.Len(t, charge.SpanId, 8)
	require.Len(t, audit.TraceId, 16)
}

func TestExporterSaysWhatTheCollectorRefused(t *testing.T) {
	// A google.rpc.Status with its message (field 2).
	status := protowire.AppendTag(nil, 2, protowire.BytesType)
	status = protowire.AppendString(status, "quota exceeded")
	err := exportErr(t, &receiver{status: http.StatusTooManyRequests, answer: status})
	require.ErrorContains(t, err, "429 Too Many Requests: quota exceeded")

	// A partial success: rejected_spans 1, error_message.
	ps := protowire.AppendTag(nil, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, 1)
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, "span too old")
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	resp = protowire.AppendBytes(resp, ps)
	err = exportErr(t, &receiver{answer: resp})
	require.ErrorContains(t, err, "rejected 1 of 2 spans: span too old")

	require.NoError(t, exportErr(t, &receiver{}), "an empty answer is a success")
}

func exportErr(t *testing.T, r *receiver) error {
	srv := httptest.NewServer(r)
	defer srv.Close()
	return (&otelworker.Exporter{URL: srv.URL}).ExportSpans(context.Background(), encodedSpans(t))
}
