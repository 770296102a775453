package server

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/directory"
	"github.com/stile-run/stile/token"
)

// Server is an http.Handler serving the Stile API.
type Server struct {
	manager *host.Manager
	token   []byte
	next    []byte                          // a second secret accepted during a rotation
	revoked func() (map[string]bool, error) // ids of revoked scoped tokens (nil: none)
	log     *slog.Logger                    // nil: no request log
	obs     Observer                        // nil: none
	quota   int                             // tenants a prefix token may have (0: no quota)
	body    time.Duration                   // bound on reading a request's body
	fleet   fleetOps                        // operations across tenants (fleet.go)
}

// DefaultBodyTimeout bounds the reading of a request's body, from the
// handler's start: a client that sends its body slower is answered 408
// body_timeout and its connection closed.
const DefaultBodyTimeout = 30 * time.Second

// WithBodyTimeout sets the bound on reading a request's body (default
// DefaultBodyTimeout).
func WithBodyTimeout(d time.Duration) Option { return func(s *Server) { s.body = d } }

// Observer is told of every request: its route pattern ("" if it matched
// none), status, duration and the body it answered (package metrics
// counts them).
type Observer interface {
	Observe(route string, status int, d time.Duration, body []byte)
}

// WithRotation accepts next beside the deployment's secret: as the admin
// token, and to verify scoped tokens signed with it.
func WithRotation(next string) Option { return func(s *Server) { s.next = []byte(next) } }

// WithRevoked refuses scoped tokens whose id revoked (asked per request
// with a scoped token) lists, and every scoped token while it fails.
func WithRevoked(revoked func() (map[string]bool, error)) Option {
	return func(s *Server) { s.revoked = revoked }
}

// WithTenantQuota bounds the tenants of each token prefix: a write of a
// token scoped to "acme-*" that would create a tenant when the directory
// already lists n tenants starting with "acme-" is refused 403
// tenant_quota. Tokens for one tenant or for every tenant have no quota.
func WithTenantQuota(n int) Option { return func(s *Server) { s.quota = n } }

// WithObserver tells o of every request.
func WithObserver(o Observer) Option { return func(s *Server) { s.obs = o } }

// Option configures a Server.
type Option func(*Server)

// WithRequestLog writes one line per request to l (method, the route's
// pattern as the module matched it, path, tenant, status and duration) at
// Info, and every 5xx at Error with its cause.
func WithRequestLog(l *slog.Logger) Option { return func(s *Server) { s.log = l } }

// New returns a server over m that requires token on every API request.
func New(m *host.Manager, token string, opts ...Option) (*Server, error) {
	if token == "" {
		return nil, errors.New("server: a token is required")
	}
	s := &Server{manager: m, token: []byte(token), body: DefaultBodyTimeout}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.log == nil && s.obs == nil {
		s.serve(w, r)
		return
	}
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK, keep: s.obs != nil}
	tenant, route := s.serve(rec, r)
	if s.obs != nil {
		s.obs.Observe(route, rec.status, time.Since(start), rec.body)
	}
	if s.log == nil {
		return
	}
	attrs := []any{"method", r.Method, "route", route, "path", r.URL.Path, "tenant", tenant,
		"status", rec.status, "ms", float64(time.Since(start).Microseconds()) / 1000}
	if rec.status >= 500 {
		var e api.Error
		json.Unmarshal(rec.body, &e)
		s.log.Error("request failed", append(attrs, "cause", e.Message)...)
		return
	}
	s.log.Info("request", attrs...)
}

// recorder keeps a response's status, and the body of a 5xx for its cause.
type recorder struct {
	http.ResponseWriter
	status int
	body   []byte
	keep   bool // keep bodies of every status (for an observer), else 5xx only
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if (r.keep || r.status >= 500) && len(r.body) < 64<<10 {
		r.body = append(r.body, b...)
	}
	return r.ResponseWriter.Write(b)
}

// Unwrap lets an http.ResponseController reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets a held response through a recorder.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// serve answers a request and says which tenant and route it named.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) (tenant, route string) {
	if r.URL.Path == "/healthz" {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
		return tenant, route
	}
	// A body must arrive within the bound, whether or not it is read:
	// one refused unread is drained after the answer, and a slow client
	// would hold the connection as long as it liked. The deadline is
	// lifted once the body is read, so that a held claim is not cut.
	rc := http.NewResponseController(w)
	if r.Body != http.NoBody && s.body > 0 {
		rc.SetReadDeadline(time.Now().Add(s.body))
	}
	if e := checkRequest(r); e != nil {
		writeError(w, e)
		return tenant, route
	}
	path := decodePath(r.URL.EscapedPath())
	role, claims, refused := s.principal(r)
	if refused != nil {
		writeError(w, refused)
		return tenant, route
	}
	if path == api.TenantsPath {
		if claims != nil && claims.Scope != "*" {
			writeError(w, api.Refuse(api.CodeForbidden, "this token is for %s: listing the tenants needs a token for every tenant (*)", claims.Scope))
			return "", "GET tenants"
		}
		rc.SetReadDeadline(time.Time{})
		s.tenants(w, r)
		return "", "GET tenants"
	}
	if path == api.FleetOperationsPath || strings.HasPrefix(path, api.FleetOperationsPath+"/") {
		s.fleetOperations(w, r, rc, path, role, claims)
		return "", "fleet operations"
	}
	if path == api.FailingPath {
		rc.SetReadDeadline(time.Time{})
		s.failing(w, r, claims)
		return "", "GET failing"
	}
	tenant, _, ok := api.SplitTenantPath(path)
	if !ok {
		writeError(w, api.NoRoute(r.Method, path))
		return tenant, route
	}
	if !api.ValidTenant(tenant) {
		writeError(w, &api.InvalidTenant)
		return tenant, route
	}
	if claims != nil && !claims.Covers(tenant) {
		writeError(w, api.Refuse(api.CodeForbidden, "this token is for %s, not tenant %s", claims.Scope, tenant))
		return tenant, route
	}
	if e := s.overQuota(r.Method, tenant, claims); e != nil {
		writeError(w, e)
		return tenant, route
	}
	body, e := s.readBody(rc, r)
	if e != nil {
		writeError(w, e)
		return tenant, route
	}
	resp, err := s.manager.Do(r.Context(), tenant, do.Request{Kind: do.KindAPI, Method: r.Method,
		Path: path, Query: r.URL.RawQuery, Headers: requestHeaders(r, role, claims), Body: body})
	if errors.Is(err, host.ErrAnswerLost) {
		writeError(w, api.AnswerLost(firstLine(err.Error())))
		return tenant, route
	}
	if err != nil {
		writeError(w, api.Internal(firstLine(err.Error())))
		return tenant, route
	}
	route = resp.Headers.Get(do.HeaderRoute)
	if route == watchRoute && resp.Status == http.StatusOK {
		s.watch(w, r, tenant, resp.Body)
		return tenant, route
	}
	for _, h := range resp.Headers {
		if !do.Reserved(h.Name) { // stile-route and the like are for the host
			w.Header().Add(h.Name, h.Value)
		}
	}
	if w.Header().Get("Content-Type") == "" { // the module's own (GET /metrics) stands
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
	return tenant, route
}

// readBody reads a request's body, up to api.MaxBodyBytes, within the
// server's bound on reading it (lifted once it is read).
func (s *Server) readBody(rc *http.ResponseController, r *http.Request) ([]byte, *api.Error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, api.MaxBodyBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, api.Refuse(api.CodeBodyTimeout, "the request body did not arrive within %s", s.body)
	}
	if err == nil && len(body) <= api.MaxBodyBytes {
		rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		return nil, api.Refuse(api.CodeInvalidRequest, "could not read the request body: %v", err)
	}
	if len(body) > api.MaxBodyBytes {
		return nil, &api.BodyTooLarge
	}
	return body, nil
}

// requestHeaders are the headers a request frame carries: the caller's
// traceparent when well-formed, and the principal this server
// authenticated. Nothing else of the client's crosses, so a client cannot
// send a stile- header of its own.
func requestHeaders(r *http.Request, role api.Role, claims *token.Claims) do.Headers {
	hs := make(do.Headers, 0, 2)
	if tp := r.Header.Get(do.HeaderTraceparent); do.ValidTraceparent(tp) {
		hs = append(hs, do.Header{Name: do.HeaderTraceparent, Value: tp})
	}
	id := "secret"
	if claims != nil {
		id = claims.ID
	}
	return append(hs, do.Header{Name: do.HeaderPrincipal, Value: string(role)}, do.Header{Name: do.HeaderTokenID, Value: id})
}

// principal authenticates a request (token.Keys.Authenticate, the rule
// every host shares): the deployment's secret is the admin; a scoped token
// its role, with its claims. A missing, forged or expired token is a 401;
// any scoped token is a 503 while the revoked list cannot be read.
func (s *Server) principal(r *http.Request) (api.Role, *token.Claims, *api.Error) {
	keys := token.Keys{Secret: string(s.token), Next: string(s.next), LoadRevoked: s.revoked}
	p, err := keys.Authenticate(credentials(r), time.Now())
	if err != nil {
		return "", nil, token.Refusal(err)
	}
	if p.Admin {
		return api.RoleAdmin, nil, nil
	}
	return p.Role, &p.Claims, nil
}

func writeError(w http.ResponseWriter, e *api.Error) {
	// Encoded exactly as the module encodes its own refusals, so a body
	// reads the same whichever layer refused the request.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(e.AppendJSON(nil))
}

// decodePath is the path the module sees, as the Worker gives it: percent-
// decoded as decodeURIComponent does. Paths with dot or empty segments
// were refused before (api.CheckPath): no host resolves them.
func decodePath(escaped string) string {
	if d, err := url.PathUnescape(escaped); err == nil {
		return d
	}
	return escaped
}

// checkRequest refuses a request whose headers are over
// api.MaxHeaderBytes (with a JSON 431, where net/http's own limit answers
// in plain text), or whose path api.CheckPath refuses.
func checkRequest(r *http.Request) *api.Error {
	n := len("host") + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v)
		}
	}
	if n > api.MaxHeaderBytes {
		return &api.HeadersTooLarge
	}
	return api.CheckPath(r.URL.EscapedPath())
}

// CheckPaths refuses, before h sees it, a request that checkRequest
// refuses, its path in particular: a mux that cleans paths would redirect it to another resource
// (307), and a client following the redirect would reach, or create, a
// tenant the path did not name.
func CheckPaths(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := checkRequest(r); e != nil {
			writeError(w, e)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// directoryGET is the manager's directory for a GET of path, or nil
// once it answered why not (another method; no directory).
func (s *Server) directoryGET(w http.ResponseWriter, r *http.Request, path string) *directory.Dir {
	if r.Method != http.MethodGet {
		allow(w, r, path, "GET")
		return nil
	}
	return s.directory(w)
}

// directory is the manager's directory, or nil once it answered 404.
func (s *Server) directory(w http.ResponseWriter) *directory.Dir {
	dir := s.manager.Directory()
	if dir == nil {
		writeError(w, api.Refuse(api.CodeNotFound, "this deployment keeps no tenant directory"))
	}
	return dir
}

// allow answers 405 to a method path does not take.
func allow(w http.ResponseWriter, r *http.Request, path string, methods ...string) {
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, api.Refuse(api.CodeMethodNotAllowed, "%s %s: use %s", r.Method, path, strings.Join(methods, " or ")))
}

// tenants answers GET /v1/tenants from the manager's directory.
func (s *Server) tenants(w http.ResponseWriter, r *http.Request) {
	dir := s.directoryGET(w, r, api.TenantsPath)
	if dir == nil {
		return
	}
	q, e := api.ParseTenantsQuery(r.URL.Query())
	if e != nil {
		writeError(w, e)
		return
	}
	resp, err := dir.List(r.Context(), q)
	if err != nil {
		writeError(w, api.Internal(firstLine(err.Error())))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp.AppendJSON(nil))
}

// failing answers GET /v1/failing from the manager's directory: a token
// for every tenant sees them all, one for a prefix ("acme-*") the tenants
// of its prefix; a token for one tenant reads that tenant's own /failing.
func (s *Server) failing(w http.ResponseWriter, r *http.Request, claims *token.Claims) {
	dir := s.directoryGET(w, r, api.FailingPath)
	if dir == nil {
		return
	}
	prefix, e := api.ParseFailingQuery(r.URL.Query())
	if e != nil {
		writeError(w, e)
		return
	}
	if claims != nil {
		if prefix, e = api.ScopePrefix(claims.Scope, prefix, "GET "+api.FailingPath+" (GET /v1/t/"+claims.Scope+"/failing reads its tenant's)"); e != nil {
			writeError(w, e)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(dir.Failing(prefix).AppendJSON(nil))
}

// overQuota refuses a write that would create one tenant more than the
// quota of its token's prefix (WithTenantQuota). It counts the directory's
// tenants, so a tenant made by a request still running is counted once
// its first answer noted it.
func (s *Server) overQuota(method, tenant string, claims *token.Claims) *api.Error {
	if s.quota <= 0 || claims == nil || method != http.MethodPost && method != http.MethodPut {
		return nil
	}
	prefix, ok := claims.Prefix()
	dir := s.manager.Directory()
	if !ok || dir == nil || s.manager.Exists(tenant) {
		return nil
	}
	if n, listed := dir.CountPrefix(prefix, tenant); !listed && n >= s.quota {
		return api.TenantQuota(claims.Scope, s.quota)
	}
	return nil
}
