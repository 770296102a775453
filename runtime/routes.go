package runtime

import (
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/printf"
)

// input is what a route's handler is given: the values of its pattern's
// parameters, in order, the raw query string and the body.
type input struct {
	params [maxParams]string
	query  string
	body   []byte
	route  api.Route // the route matched, for the host's logs and metrics
	// takesQuery says the route reads query parameters, takesBody a body.
	takesQuery, takesBody bool
}

// maxParams is the most {parameters} a route's pattern may have.
const maxParams = 2

// handler validates a request's input and returns the route that runs it
// in the transaction, or a refusal decided before any storage is touched.
// What the route decides for after the commit it notes on c.
type handler func(t *Tenant, c *call, in input) (route, *api.Error)

// routes is the tenant API: every route with its handler. The 404 and 405
// answers are derived from it, and the client builds its paths from the
// same api.Route values.
var routes = []routeEntry{
	{Route: api.RouteListJobs, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.listJobs(in.query) }, query: true},
	{Route: api.RouteEnqueue, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.enqueueOne(in.body) }, body: true},
	{Route: api.RouteEnqueueMany, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.enqueueBatch(in.body) }, body: true},
	{Route: api.RouteGetJob, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getJob(in.params[0], in.query) }, query: true},
	{Route: api.RouteDeleteJob, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.deleteJob(in.params[0]) }},
	{Route: api.RouteHeartbeat, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.heartbeat(in.params[0], in.body) }, body: true},
	{Route: api.RouteReport, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.reportOne(in.params[0], in.body) }, body: true},
	{Route: api.RouteCancel, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.cancel(in.params[0], in.body) }, body: true},
	{Route: api.RouteRetry, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.retry(in.params[0]) }},
	{Route: api.RouteClaim, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.claim(c, in.body) }, body: true},
	{Route: api.RouteReportMany, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.reportBatch(in.body) }, body: true},
	{Route: api.RouteQueues, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.queues(), nil }},
	{Route: api.RoutePauseQueue, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.pauseQueue(in.params[0], in.body) }, body: true},
	{Route: api.RouteLimits, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.limits(), nil }},
	{Route: api.RouteSetLimit, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.setLimit(in.params[0], in.body) }, body: true},
	{Route: api.RouteFailing, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.failing(), nil }},
	{Route: api.RouteOperations, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.listOperations(), nil }},
	{Route: api.RouteStartOp, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.startOperation(in.body) }, body: true},
	{Route: api.RouteGetOperation, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getOperation(in.params[0]) }},
	{Route: api.RouteRates, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.rates(), nil }},
	{Route: api.RouteGetRate, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getRate(in.params[0]) }},
	{Route: api.RouteSetRate, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.setRate(in.params[0], in.body) }, body: true},
	{Route: api.RouteDeleteRate, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.deleteRate(in.params[0]) }},
	{Route: api.RouteTx, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.runTx(in.params[0], in.body) }, body: true},
	{Route: api.RouteSchedules, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.listSchedules(), nil }},
	{Route: api.RoutePutSchedule, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.putSchedule(in.params[0], in.body) }, body: true},
	{Route: api.RouteGetSchedule, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getSchedule(in.params[0]), nil }},
	{Route: api.RouteDelSchedule, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.deleteSchedule(in.params[0]), nil }},
	{Route: api.RouteStatus, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.status(), nil }},
	{Route: api.RouteEvents, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.readEvents(in.query) }, query: true},
	{Route: api.RouteReadStream, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.readStream(in.params[0], in.query) }, query: true},
	{Route: api.RouteAppend, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.appendEvents(in.params[0], in.body) }, body: true},
	{Route: api.RouteCommand, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.command(in.body) }, body: true},
	{Route: api.RouteGetCommand, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getCommand(in.params[0]), nil }},
	{Route: api.RouteReactions, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.reactionsStatus(), nil }},
	{Route: api.RouteClaimEvents, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.claimReactions(c, in.body) }, body: true},
	{Route: api.RouteSettle, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.settle(in.body) }, body: true},
	{Route: api.RouteSkip, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.skipReaction(in.params[0], in.body) }, body: true},
	{Route: api.RoutePauseReaction, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.pauseReaction(in.params[0], in.body) }, body: true},
	{Route: api.RouteProjections, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.projectionsStatus(), nil }},
	{Route: api.RouteRebuild, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.rebuildProjection(in.params[0]) }},
	{Route: api.RouteQuery, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.runQuery(c, in.params[0], in.query) }, query: true},
	{Route: api.RoutePushes, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.listPushes(), nil }},
	{Route: api.RoutePushDone, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.pushDone(c, in.params[0], in.body) }, body: true},
	{Route: api.RouteWatch, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.watch(in.query) }, query: true},
	{Route: api.RouteAudit, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.listAudit(), nil }},
	{Route: api.RouteStorage, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.storage(c), nil }},
	{Route: api.RouteRetention, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getRetention(), nil }},
	{Route: api.RouteErase, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.erase(c, in.query) }, query: true},
	{Route: api.RouteCreateTenant, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.createTenant(c), nil }},
	{Route: api.RouteExport, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.export(in.query) }, query: true},
	{Route: api.RouteImport, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.importPage(c, in.body) }, body: true},
	{Route: api.RouteAbortImport, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.abortImport(c), nil }},
	{Route: api.RouteMigrate, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.runMigrations(), nil }},
	{Route: api.RoutePutRetention, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.putRetention(c, in.body) }, body: true},
	{Route: api.RouteMetrics, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.metrics(), nil }},
	{Route: api.RouteUsage, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.getUsage(in.query) }, query: true},
	{Route: api.RoutePutBudget, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.putBudget(c, in.body) }, body: true},
	{Route: api.RouteDelBudget, handle: func(t *Tenant, c *call, in input) (route, *api.Error) { return t.deleteBudget(c), nil }},
}

// routeEntry is a route of the table; segs is its pattern, split once
// when the module starts. query says its handler reads query parameters
// (and refuses unknown ones), body that it reads a body; the other routes
// refuse any.
type routeEntry struct {
	api.Route
	handle handler
	query  bool
	body   bool
	segs   segments
}

func init() {
	for i := range routes {
		routes[i].segs = pattern(routes[i].Route)
	}
}

// match routes an API request and validates its input. Everything that can
// be refused without reading storage is refused here, so bad input writes
// nothing, not even due work. allow lists the methods of a path asked with
// another one (405), for the Allow header.
func (t *Tenant) match(c *call) (run route, refused *api.Error, allow string) {
	req := c.req
	tenant, rest, ok := api.SplitTenantPath(req.Path)
	if !ok {
		return nil, api.NoRoute(req.Method, req.Path), ""
	}
	if !api.ValidTenant(tenant) {
		return nil, &api.InvalidTenant, ""
	}
	if t.name == "" {
		t.name = tenant
	}
	if tenant != t.name {
		// One module instance serves one tenant; a host that routes another
		// tenant's request here is broken, and must not write.
		return nil, api.Refuse(api.CodeInvalidTenant, "this object serves tenant %q, not %q", t.name, tenant), ""
	}
	if len(req.Body) > api.MaxBodyBytes {
		return nil, &api.BodyTooLarge, ""
	}
	h, in, allow := lookup(req.Method, rest)
	switch {
	case h != nil:
		in.query, in.body = req.Query, req.Body
		c.route = in.route
		// The host verified the token and says its role; no header is a
		// host that knows only the admin token.
		if role := api.Role(req.Headers.Get(do.HeaderPrincipal)); role != "" && !in.route.Allows(role) {
			return nil, forbidden(role, in.route), ""
		}
		if req.Query != "" && !in.takesQuery {
			return nil, api.Refuse(api.CodeInvalidRequest, "%s takes no query parameters: drop ?%s", in.route.String(), req.Query), ""
		}
		if len(req.Body) > 0 && !in.takesBody {
			return nil, api.Refuse(api.CodeInvalidRequest, "%s takes no body: send none", in.route.String()), ""
		}
		run, refused = h(t, c, in)
		return run, refused, ""
	case allow != "":
		return nil, api.Refuse(api.CodeMethodNotAllowed, "%s %s: use %s", req.Method, req.Path, allow), allow
	}
	return nil, api.NoRoute(req.Method, req.Path), ""
}

// lookup finds the handler of method on path (the part after the tenant).
// Of the patterns that match the path, only the most specific count (the
// most literal segments: jobs/batch before jobs/{id}); when none of those
// has the method, allow lists the methods they have. (It runs on every
// request inside Wasm, where each call and loop costs: the path is split
// once, and a pattern is compared only when its segment count matches.)
func lookup(method, path string) (h handler, in input, allow string) {
	var p segments
	if !p.split(path) {
		return nil, in, ""
	}
	best := -1
	var params [maxParams]string
	for i := range routes {
		r := &routes[i]
		if r.segs.n != p.n {
			continue
		}
		literals, ok := r.segs.match(&p, &params)
		if !ok || literals < best {
			continue
		}
		if literals > best {
			best, h = literals, nil
		}
		if r.Method == method {
			h, in.params, in.route, in.takesQuery, in.takesBody = r.handle, params, r.Route, r.query, r.body
		}
	}
	if h != nil || best < 0 {
		return h, in, ""
	}
	for i := range routes { // a 405: the methods the path has
		r := &routes[i]
		if r.segs.n != p.n {
			continue
		}
		if literals, ok := r.segs.match(&p, &params); ok && literals == best && !strings.Contains(allow, r.Method) {
			if allow != "" {
				allow += ", "
			}
			allow += r.Method
		}
	}
	return nil, in, allow
}

// maxSegments is the most segments a route's pattern has.
const maxSegments = 3

// segments is a path or a pattern split at '/'; a pattern's {parameter}
// segments are marked.
type segments struct {
	n     int
	s     [maxSegments]string
	param [maxSegments]bool
}

// split splits path; false when it has more segments than any route.
func (p *segments) split(path string) bool {
	for more := true; more; p.n++ {
		if p.n == maxSegments {
			return false
		}
		p.s[p.n], path, more = strings.Cut(path, "/")
	}
	return true
}

// pattern splits a route's pattern, marking its parameters.
func pattern(r api.Route) segments {
	var p segments
	if !p.split(r.Pattern) {
		panic("runtime: route " + r.String() + " has more than maxSegments segments")
	}
	params := 0
	for i := 0; i < p.n; i++ {
		if api.IsParam(p.s[i]) {
			p.param[i] = true
			params++
		}
	}
	if params > maxParams {
		panic("runtime: route " + r.String() + " has more than maxParams parameters")
	}
	return p
}

// match matches a path of the same segment count against the pattern,
// filling params with the (non-empty) parameter segments, and returns how
// many literal segments matched.
func (pat *segments) match(path *segments, params *[maxParams]string) (literals int, ok bool) {
	n := 0
	for i := 0; i < pat.n; i++ {
		switch {
		case pat.param[i]:
			if path.s[i] == "" {
				return 0, false
			}
			params[n] = path.s[i]
			n++
		case pat.s[i] == path.s[i]:
			literals++
		default:
			return 0, false
		}
	}
	return literals, true
}

// batchSize refuses an empty batch or one over its limit.
func batchSize(n, max int, field string) *api.Error {
	if n == 0 {
		return api.Refuse(api.CodeInvalidRequest, "missing field %q: send at least one", field)
	}
	if n > max {
		return api.Refuse(api.CodeInvalidRequest, "%d %s in one batch exceed the limit of %d: split the batch", n, field, max)
	}
	return nil
}

// decodeErr turns a body the API's decoders refused into a 400.
func decodeErr(err error) *api.Error {
	return api.Refuse(api.CodeInvalidJSON, "%s", err.Error())
}

func parseJobID(s string) (int64, *api.Error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || id > 1<<53-1 {
		return 0, api.Refuse(api.CodeNotFound, "job %q does not exist", s)
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
		return strings.Join(names[:show], ", ") + printf.Sprintf(" and %d more", len(names)-show)
	}
	return strings.Join(names, ", ")
}

// refusal is the answer of a refusal.
func refusal(e *api.Error) result {
	return result{status: e.Status, body: e.AppendJSON}
}

// query parses a request's query string: key=value pairs joined by '&',
// percent-encoded, '+' for a space. A key given twice is refused rather
// than guessed at. (Written here rather than taken from net/url, which
// adds 27 KB of gzipped Wasm to every module for this one call.)
func query(raw string) (map[string]string, *api.Error) {
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
			return nil, api.Refuse(api.CodeInvalidRequest, "malformed query string: bad percent-encoding in %q", pair)
		}
		if _, dup := q[key]; dup {
			return nil, api.Refuse(api.CodeInvalidRequest, "query parameter %q is given twice", key)
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

// forbidden refuses a route to a role, naming who may call it.
func forbidden(role api.Role, r api.Route) *api.Error {
	names := make([]string, 0, len(api.Roles))
	for _, x := range r.AllowedRoles() {
		names = append(names, string(x))
	}
	return api.Refuse(api.CodeForbidden, "%s token may not %s: that needs %s", withArticle(string(role)), r.String(), strings.Join(names, " or "))
}

// withArticle is a word with its indefinite article: "an admin", "a reader".
func withArticle(word string) string {
	if word != "" && strings.IndexByte("aeiou", word[0]) >= 0 {
		return "an " + word
	}
	return "a " + word
}
