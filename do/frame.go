package do

import (
	"encoding/binary"

	"github.com/stile-run/stile/internal/printf"
)

// Frames carry one API request into the tenant module and its response out.
// Transports (the Worker's JS, the Go dev server) build a Request from an
// HTTP request, hand its encoding to ExportHandle, and turn the Response
// back into HTTP. They add nothing of their own to the API but the few
// headers named below (see Header).
//
//	request  = version(2) kind(u8) str(method) str(path) str(query)
//	           headers bytes(body)
//	response = version(2) uvarint(status) flags(u8) varint(alarm_at)
//	           uvarint(hold_ms) headers bytes(body)
//	headers  = uvarint(n) {str(name) str(value)}*
//	str, bytes = uvarint(len) data
//
// Append* encode what they are given; Decode* refuse a frame whose headers
// break the limits (MaxHeaders, MaxHeaderName, MaxHeaderValue) or the
// character rules with ErrCodec, in Go and in JS alike.

// FrameVersion is the version byte of both frames. Version 2 added the
// headers; a host and its module are always built together, so version 1
// is refused rather than read.
const FrameVersion = 2

// RequestKind says who is asking.
type RequestKind byte

// Request kinds.
const (
	// KindAPI is an API call from a client, already authenticated by the
	// transport.
	KindAPI RequestKind = 1
	// KindAlarm is the tenant's alarm firing. It carries no path or body.
	KindAlarm RequestKind = 2
)

// Request is one call into the tenant module.
type Request struct {
	Kind    RequestKind
	Method  string
	Path    string // the URL path, e.g. /v1/t/acme/jobs
	Query   string // the raw query string, without '?'
	Headers Headers
	Body    []byte
}

// Response flags.
const (
	// FlagWake: the request committed writes that may have made work
	// claimable; the host should retry held claims.
	FlagWake = 1 << 0
	// FlagFinished: the request committed writes that may have ended a
	// job (a report, a cancel, a lease run out); the host should retry
	// held waits for jobs.
	FlagFinished = 1 << 1
	// FlagHoldFinished: a held request (HoldMs) waits for a job to end,
	// not for claimable work: send it again on FlagFinished.
	FlagHoldFinished = 1 << 2
)

// Response is the module's answer.
type Response struct {
	Status int
	Flags  byte
	// AlarmAt is when the tenant's alarm should next fire, in Unix ms,
	// computed from committed state; 0 means no alarm is needed, and
	// AlarmUnchanged that the host must keep the alarm it has (a request
	// refused before it read any state).
	AlarmAt int64
	// HoldMs, when > 0, marks an empty long-poll claim: the host may hold
	// the request for up to this long and send the same request again when
	// woken (FlagWake from another request, FlagFinished if the response
	// has FlagHoldFinished, or AlarmAt passing).
	HoldMs  int64
	Headers Headers
	Body    []byte
}

// AlarmUnchanged is Response.AlarmAt for "keep the current alarm".
const AlarmUnchanged = -1

// AppendRequest appends the encoding of r.
func AppendRequest(b []byte, r Request) []byte {
	b = append(b, FrameVersion, byte(r.Kind))
	b = appendBytes(b, r.Method)
	b = appendBytes(b, r.Path)
	b = appendBytes(b, r.Query)
	b = appendHeaders(b, r.Headers)
	return appendBytes(b, r.Body)
}

// DecodeRequest parses a request frame. Body aliases b.
func DecodeRequest(b []byte) (Request, error) {
	var r Request
	if len(b) < 2 || b[0] != FrameVersion {
		return r, printf.Errorf("%w: not a version %d request frame", ErrCodec, FrameVersion)
	}
	r.Kind = RequestKind(b[1])
	d := Decoder{buf: b, off: 2}
	var parts [3][]byte
	for i := range parts {
		p, err := d.field("request field")
		if err != nil {
			return r, err
		}
		parts[i] = p
	}
	hs, err := d.headers()
	if err != nil {
		return r, err
	}
	body, err := d.field("request body")
	if err != nil {
		return r, err
	}
	if !d.Done() {
		return r, printf.Errorf("%w: trailing bytes after request frame", ErrCodec)
	}
	r.Method, r.Path, r.Query, r.Headers, r.Body = string(parts[0]), string(parts[1]), string(parts[2]), hs, body
	return r, nil
}

// AppendResponse appends the encoding of r.
func AppendResponse(b []byte, r Response) []byte {
	b = append(b, FrameVersion)
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = append(b, r.Flags)
	b = binary.AppendVarint(b, r.AlarmAt)
	b = binary.AppendUvarint(b, uint64(r.HoldMs))
	b = appendHeaders(b, r.Headers)
	return appendBytes(b, r.Body)
}

// DecodeResponse parses a response frame. Body aliases b.
func DecodeResponse(b []byte) (Response, error) {
	var r Response
	if len(b) < 1 || b[0] != FrameVersion {
		return r, printf.Errorf("%w: not a version %d response frame", ErrCodec, FrameVersion)
	}
	d := Decoder{buf: b, off: 1}
	status, err := d.Uvarint()
	if err != nil {
		return r, err
	}
	if d.off >= len(b) {
		return r, printf.Errorf("%w: truncated response frame", ErrCodec)
	}
	r.Status = int(status)
	r.Flags = b[d.off]
	d.off++
	alarm, n := binary.Varint(b[d.off:])
	if n <= 0 {
		return r, printf.Errorf("%w: bad alarm time", ErrCodec)
	}
	d.off += n
	r.AlarmAt = alarm
	hold, err := d.Uvarint()
	if err != nil {
		return r, err
	}
	r.HoldMs = int64(hold)
	if r.Headers, err = d.headers(); err != nil {
		return r, err
	}
	blen, err := d.Uvarint()
	if err != nil {
		return r, err
	}
	if blen != uint64(len(b)-d.off) {
		return r, printf.Errorf("%w: response body length %d does not match the frame", ErrCodec, blen)
	}
	r.Body = b[d.off:]
	return r, nil
}

// field reads one length-prefixed byte string, aliasing the buffer.
func (d *Decoder) field(what string) ([]byte, error) {
	n, err := d.Uvarint()
	if err != nil {
		return nil, err
	}
	if n > uint64(len(d.buf)-d.off) {
		return nil, printf.Errorf("%w: %s overruns the frame", ErrCodec, what)
	}
	p := d.buf[d.off : d.off+int(n)]
	d.off += int(n)
	return p, nil
}

// headers reads a frame's header list; none decodes as nil.
func (d *Decoder) headers() (Headers, error) {
	n, err := d.Uvarint()
	if err != nil {
		return nil, err
	}
	if n > MaxHeaders {
		return nil, printf.Errorf("%w: %d headers exceed %d", ErrCodec, n, MaxHeaders)
	}
	if n == 0 {
		return nil, nil
	}
	hs := make(Headers, n)
	for i := range hs {
		name, err := d.field("header name")
		if err != nil {
			return nil, err
		}
		value, err := d.field("header value")
		if err != nil {
			return nil, err
		}
		hs[i] = Header{Name: string(name), Value: string(value)}
		if err := CheckHeader(hs[i]); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

func appendHeaders(b []byte, hs Headers) []byte {
	b = binary.AppendUvarint(b, uint64(len(hs)))
	for i := 0; i < 2*len(hs); i++ {
		s := hs[i/2].Name
		if i%2 == 1 {
			s = hs[i/2].Value
		}
		b = appendBytes(b, s)
	}
	return b
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
