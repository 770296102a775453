package server

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
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
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, api.Unauthorized)
		return
	}
	tenant, _, ok := api.SplitTenantPath(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: api.NoRoute(r.Method, r.URL.Path)})
		return
	}
	if !api.ValidTenant(tenant) {
		writeError(w, http.StatusBadRequest, api.InvalidTenant)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, api.MaxBodyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, api.Error{Code: api.CodeInvalidRequest, Message: "could not read the request body: " + err.Error()})
		return
	}
	if len(body) > api.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, api.BodyTooLarge)
		return
	}
	resp, err := s.manager.Do(r.Context(), tenant, do.Request{Kind: do.KindAPI, Method: r.Method,
		Path: r.URL.Path, Query: r.URL.RawQuery, Headers: requestHeaders(r), Body: body})
	if err != nil {
		writeError(w, http.StatusInternalServerError, api.Error{Code: api.CodeInternal, Message: firstLine(err.Error())})
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
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), s.token) == 1
}

func writeError(w http.ResponseWriter, status int, e api.Error) {
	// Marshalled exactly as the module marshals its own errors, so a body
	// reads the same whichever layer refused the request.
	body, _ := json.Marshal(e)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
