package server

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/internal/bearer"
)

// Server is an http.Handler serving the Stile API.
type Server struct {
	manager *host.Manager
	token   []byte
}

// New returns a server over m that requires token on every API request.
func New(m *host.Manager, token string) (*Server, error) {
	if token == "" {
		return nil, errors.New("server: a token is required")
	}
	return &Server{manager: m, token: []byte(token)}, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
		return
	}
	path := resolvePath(r.URL.EscapedPath())
	if !s.authorized(r) {
		writeError(w, &api.Unauthorized)
		return
	}
	if path == api.TenantsPath {
		s.tenants(w, r)
		return
	}
	tenant, _, ok := api.SplitTenantPath(path)
	if !ok {
		writeError(w, api.NoRoute(r.Method, path))
		return
	}
	if !api.ValidTenant(tenant) {
		writeError(w, &api.InvalidTenant)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, api.MaxBodyBytes+1))
	if err != nil {
		writeError(w, api.Refuse(api.CodeInvalidRequest, "could not read the request body: %v", err))
		return
	}
	if len(body) > api.MaxBodyBytes {
		writeError(w, &api.BodyTooLarge)
		return
	}
	resp, err := s.manager.Do(r.Context(), tenant, do.Request{Kind: do.KindAPI, Method: r.Method,
		Path: path, Query: r.URL.RawQuery, Headers: requestHeaders(r), Body: body})
	if err != nil {
		writeError(w, api.Internal(firstLine(err.Error())))
		return
	}
	for _, h := range resp.Headers {
		if !do.Reserved(h.Name) { // stile-route and the like are for the host
			w.Header().Add(h.Name, h.Value)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.Status)
	w.Write(resp.Body)
}

// requestHeaders are the headers a request frame carries: the caller's
// traceparent when well-formed, and the principal this server
// authenticated. Nothing else of the client's crosses, so a client cannot
// send a stile- header of its own.
func requestHeaders(r *http.Request) do.Headers {
	hs := make(do.Headers, 0, 2)
	if tp := r.Header.Get(do.HeaderTraceparent); do.ValidTraceparent(tp) {
		hs = append(hs, do.Header{Name: do.HeaderTraceparent, Value: tp})
	}
	return append(hs, do.Header{Name: do.HeaderPrincipal, Value: do.PrincipalAdmin})
}

func (s *Server) authorized(r *http.Request) bool {
	return bearer.Matches(r, s.token)
}

func writeError(w http.ResponseWriter, e *api.Error) {
	// Encoded exactly as the module encodes its own refusals, so a body
	// reads the same whichever layer refused the request.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	w.Write(e.AppendJSON(nil))
}

// resolvePath is the path the module sees, as workerd gives it to the
// Worker: "." and ".." segments (also as %2e) resolved by the WHATWG URL
// rules, then percent-decoded as decodeURIComponent does (left as it is
// when that fails).
func resolvePath(escaped string) string {
	segs := strings.Split(strings.TrimPrefix(escaped, "/"), "/")
	out := segs[:0]
	for i, seg := range segs {
		last := i == len(segs)-1
		switch strings.ToLower(seg) {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		case ".", "%2e":
		default:
			out = append(out, seg)
			continue
		}
		if last {
			out = append(out, "") // a dot segment at the end leaves a trailing slash
		}
	}
	p := "/" + strings.Join(out, "/")
	if d, err := url.PathUnescape(p); err == nil {
		return d
	}
	return p
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tenants answers GET /v1/tenants from the manager's directory.
func (s *Server) tenants(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		writeError(w, api.Refuse(api.CodeMethodNotAllowed, "%s %s: use GET", r.Method, api.TenantsPath))
		return
	}
	dir := s.manager.Directory()
	if dir == nil {
		writeError(w, api.Refuse(api.CodeNotFound, "this deployment keeps no tenant directory"))
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
