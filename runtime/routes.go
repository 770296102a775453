package runtime

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/fence"
	"github.com/stile-run/stile/runtime/internal/fencestore"
)

// apiError is a refusal decided before any storage is touched.
type apiError struct {
	status int
	code   string
	msg    string
}

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{status: statusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// match routes an API request and validates its input. Everything that can
// be refused without reading storage is refused here, so bad input writes
// nothing, not even due work.
func (t *Tenant) match(req do.Request) (route, *apiError) {
	tenant, rest, ok := api.SplitTenantPath(req.Path)
	if !ok {
		return nil, &apiError{statusNotFound, api.CodeNotFound, api.NoRoute(req.Method, req.Path)}
	}
	if !api.ValidTenant(tenant) {
		return nil, &apiError{statusBadRequest, api.InvalidTenant.Code, api.InvalidTenant.Message}
	}
	if t.name == "" {
		t.name = tenant
	}
	if tenant != t.name {
		// One module instance serves one tenant; a host that routes another
		// tenant's request here is broken, and must not write.
		return nil, &apiError{statusBadRequest, api.CodeInvalidTenant, fmt.Sprintf("this object serves tenant %q, not %q", t.name, tenant)}
	}
	if len(req.Body) > api.MaxBodyBytes {
		return nil, &apiError{statusTooLarge, api.BodyTooLarge.Code, api.BodyTooLarge.Message}
	}
	parts := strings.Split(rest, "/")
	switch {
	case rest == "jobs" && req.Method == "GET":
		return t.listJobs(req.Query)
	case rest == "jobs":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.enqueueOne(req.Body)
	case rest == "jobs/batch":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.enqueueBatch(req.Body)
	case len(parts) == 2 && parts[0] == "jobs" && req.Method == "DELETE":
		return t.deleteJob(parts[1])
	case len(parts) == 2 && parts[0] == "jobs":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.getJob(parts[1])
	case len(parts) == 3 && parts[0] == "jobs":
		id := parts[1]
		switch parts[2] {
		case "heartbeat":
			if e := allow(req, "POST"); e != nil {
				return nil, e
			}
			return t.heartbeat(id, req.Body)
		case "report":
			if e := allow(req, "POST"); e != nil {
				return nil, e
			}
			return t.reportOne(id, req.Body)
		case "cancel":
			if e := allow(req, "POST"); e != nil {
				return nil, e
			}
			return t.cancel(id, req.Body)
		case "retry":
			if e := allow(req, "POST"); e != nil {
				return nil, e
			}
			return t.retry(id)
		}
	case rest == "claims":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.claim(req.Body)
	case rest == "reports":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.reportBatch(req.Body)
	case rest == "queues":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.queues(), nil
	case rest == "concurrency":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.limits(), nil
	case len(parts) == 2 && parts[0] == "concurrency":
		if e := allow(req, "PUT"); e != nil {
			return nil, e
		}
		return t.setLimit(parts[1], req.Body)
	case len(parts) == 2 && parts[0] == "tx":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.runTx(parts[1], req.Body)
	case rest == "schedules":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.listSchedules(), nil
	case len(parts) == 2 && parts[0] == "schedules":
		switch req.Method {
		case "PUT":
			return t.putSchedule(parts[1], req.Body)
		case "GET":
			return t.getSchedule(parts[1]), nil
		case "DELETE":
			return t.deleteSchedule(parts[1]), nil
		}
		return nil, &apiError{statusMethodNotAllowed, api.CodeMethodNotAllowed, fmt.Sprintf("%s %s: use PUT, GET or DELETE", req.Method, req.Path)}
	case rest == "status":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.status(), nil
	case rest == "events":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.readEvents(req.Query)
	case len(parts) == 2 && parts[0] == "streams" && req.Method == "GET":
		return t.readStream(parts[1], req.Query)
	case len(parts) == 2 && parts[0] == "streams":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.appendEvents(parts[1], req.Body)
	case rest == "commands":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.command(req.Body)
	case len(parts) == 2 && parts[0] == "commands":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.getCommand(parts[1]), nil
	case rest == "reactions":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.reactionsStatus(), nil
	case rest == "reactions/claims":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.claimReactions(req.Body)
	case rest == "reactions/settle":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.settle(req.Body)
	case len(parts) == 3 && parts[0] == "reactions" && parts[2] == "skip":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.skipReaction(parts[1], req.Body)
	case rest == "projections":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.projectionsStatus(), nil
	case len(parts) == 3 && parts[0] == "projections" && parts[2] == "rebuild":
		if e := allow(req, "POST"); e != nil {
			return nil, e
		}
		return t.rebuildProjection(parts[1])
	case len(parts) == 2 && parts[0] == "queries":
		if e := allow(req, "GET"); e != nil {
			return nil, e
		}
		return t.runQuery(parts[1], req.Query)
	}
	return nil, &apiError{statusNotFound, api.CodeNotFound, fmt.Sprintf("no route %s %s", req.Method, req.Path)}
}

// allow refuses a request whose method is not want.
func allow(req do.Request, want string) *apiError {
	if req.Method != want {
		return &apiError{statusMethodNotAllowed, api.CodeMethodNotAllowed, fmt.Sprintf("%s %s: use %s", req.Method, req.Path, want)}
	}
	return nil
}

// batchSize refuses an empty batch or one over its limit.
func batchSize(n, max int, field string) *apiError {
	if n == 0 {
		return badRequest(api.CodeInvalidRequest, "missing field %q: send at least one", field)
	}
	if n > max {
		return badRequest(api.CodeInvalidRequest, "%d %s in one batch exceed the limit of %d: split the batch", n, field, max)
	}
	return nil
}

// decodeErr turns a body the API's decoders refused into a 400.
func decodeErr(err error) *apiError {
	return badRequest(api.CodeInvalidJSON, "%s", err.Error())
}

func parseJobID(s string) (int64, *apiError) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || id > 1<<53-1 {
		return 0, &apiError{statusNotFound, api.CodeNotFound, fmt.Sprintf("job %q does not exist", s)}
	}
	return id, nil
}

func fmtID(id int64) string { return strconv.FormatInt(id, 10) }

func ts(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// maxTimeMs is the last millisecond of year 9999: times the API takes stay
// within what RFC 3339 can write.
const maxTimeMs = 253402300799999

func tsPtr(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := ts(ms)
	return &t
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func kindList(names []string) string {
	if len(names) == 0 {
		return "no job kinds"
	}
	const show = 10
	if len(names) > show {
		return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more", len(names)-show)
	}
	return strings.Join(names, ", ")
}

func notFound(id string) result {
	return result{status: statusNotFound, body: (&api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("job %q does not exist", id)}).AppendJSON}
}

func rejected(rej *fence.Rejection) result {
	return result{status: statusConflict, body: (&api.Error{Code: string(rej.Code), Message: rej.Message}).AppendJSON}
}

func refused(r *fencestore.Refusal) result {
	status := statusConflict
	if r.Code == api.CodeInvalidRequest {
		status = statusBadRequest
	}
	return result{status: status, body: (&api.Error{Code: r.Code, Message: r.Message}).AppendJSON}
}

// query parses a request's query string: key=value pairs joined by '&',
// percent-encoded, '+' for a space. A key given twice is refused rather
// than guessed at. (Written here rather than taken from net/url, which
// adds 27 KB of gzipped Wasm to every module for this one call.)
func query(raw string) (map[string]string, *apiError) {
	q := map[string]string{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, ok1 := unescapeQuery(k)
		val, ok2 := unescapeQuery(v)
		if !ok1 || !ok2 {
			return nil, badRequest(api.CodeInvalidRequest, "malformed query string: bad percent-encoding in %q", pair)
		}
		if _, dup := q[key]; dup {
			return nil, badRequest(api.CodeInvalidRequest, "query parameter %q is given twice", key)
		}
		q[key] = val
	}
	return q, nil
}

// unescapeQuery decodes one query component; ok is false for a '%' not
// followed by two hex digits.
func unescapeQuery(s string) (string, bool) {
	if !strings.ContainsAny(s, "%+") {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 >= len(s) {
				return "", false
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", false
			}
			b = append(b, hi<<4|lo)
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(b), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
