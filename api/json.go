package api

import (
	"bytes"

	"github.com/stile-run/stile/internal/jsonwire"
)

// The API's types encode and decode themselves without reflection:
// api/internal/apigen writes each type's AppendJSON, each request's
// strict decoder and the lenient decoders of the answers a worker reads
// for every job (json_gen.go) from its definition, calling the
// primitives of internal/jsonwire; MarshalJSON delegates to AppendJSON,
// so json.Marshal of these types gives the very same bytes anywhere.

// DecodeError is what every Decode function returns for a body that is
// not the JSON the request expects (errors.As finds it; its message says
// what was wrong, in one line).
type DecodeError = jsonwire.DecodeError

// TimeLayout is how the API writes times: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// DecodeCancel decodes the body of POST /jobs/{id}/cancel; an empty body
// is an empty request.
func DecodeCancel(b []byte) (CancelRequest, error) {
	var c CancelRequest
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	r := jsonwire.NewReader(b)
	err := r.Open()
	if err == nil {
		err = r.CloseBody(c.decode(&r))
	}
	return c, err
}
