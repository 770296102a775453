package do_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/do"
)

// A typical request: a job claim with the headers every transport sets.
var (
	benchBody = []byte(`{"worker":"w-1","queues":["default"],"limit":10,"wait_ms":20000}`)
	benchReq  = do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/acme/claims", Body: benchBody}
	benchHdrs = do.Headers{{Name: do.HeaderTraceparent, Value: tp}, {Name: do.HeaderPrincipal, Value: do.PrincipalAdmin}}
)

func TestHeadersGetSet(t *testing.T) {
	var hs do.Headers
	require.Equal(t, "", hs.Get(do.HeaderAllow))
	hs.Set(do.HeaderAllow, "GET")
	hs.Set(do.HeaderRoute, "/v1/t/{tenant}/jobs")
	hs.Set(do.HeaderAllow, "GET, POST")
	require.Equal(t, do.Headers{{Name: "allow", Value: "GET, POST"}, {Name: "stile-route", Value: "/v1/t/{tenant}/jobs"}}, hs)
	require.Equal(t, "GET, POST", hs.Get(do.HeaderAllow))
	require.True(t, do.Reserved(do.HeaderRoute))
	require.True(t, do.Reserved(do.HeaderPrincipal))
	require.False(t, do.Reserved(do.HeaderAllow))
}

func TestFrameVersionOneIsRefused(t *testing.T) {
	_, err := do.DecodeRequest([]byte{1, 1, 0, 0, 0, 0})
	require.ErrorIs(t, err, do.ErrCodec)
	_, err = do.DecodeResponse([]byte{1, 0xc8, 1, 0, 0, 0, 0})
	require.ErrorIs(t, err, do.ErrCodec)
}

func benchRequest(b *testing.B, hs do.Headers) {
	r := benchReq
	r.Headers = hs
	var buf []byte
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = do.AppendRequest(buf[:0], r)
		}
	})
	frame := do.AppendRequest(nil, r)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := do.DecodeRequest(frame); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkRequestFrame(b *testing.B) {
	b.Run("no-headers", func(b *testing.B) { benchRequest(b, nil) })
	b.Run("two-headers", func(b *testing.B) { benchRequest(b, benchHdrs) })
}

func BenchmarkResponseFrame(b *testing.B) {
	for _, c := range []struct {
		name string
		hs   do.Headers
	}{{"no-headers", nil}, {"route-header", do.Headers{{Name: do.HeaderRoute, Value: "/v1/t/{tenant}/claims"}}}} {
		r := do.Response{Status: 200, AlarmAt: 1764480000000, Headers: c.hs, Body: benchBody}
		var buf []byte
		b.Run(c.name+"/encode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = do.AppendResponse(buf[:0], r)
			}
		})
		frame := do.AppendResponse(nil, r)
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := do.DecodeResponse(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
