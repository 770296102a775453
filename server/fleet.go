package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/token"
)

// Operations across tenants (api.FleetOperationsPath): the server gives a
// bulk operation to the tenants of a prefix, api.FleetOperationSlice at a
// time, in name order, each one POST /operations of the tenant, which
// runs it in its own slices; a read of the operation reads the progress
// of the tenants' operations not known to be done. This host keeps the
// operations in memory (the tenants keep theirs): a restart forgets the
// fleet's view of them, not what the tenants do. The Worker's directory
// keeps them in its storage.

// fleetOps are the operations across tenants this server started.
type fleetOps struct {
	mu  sync.Mutex
	seq int64
	ops []*fleetOp // oldest first
}

type fleetOp struct {
	view   api.FleetOperation
	req    api.FleetOperationRequest
	as     do.Headers // the caller's principal, whom each tenant audits
	cursor string     // the last tenant given it
	given  bool       // every tenant of the prefix was given it
	// misses counts each tenant's reads of its part that failed in a row.
	misses map[string]int
}

// maxFleetMisses bounds the reads of a tenant's part that may fail in a
// row (a second apart, when followed) before the part is given up.
const maxFleetMisses = 60

// callTenant sends one request to a tenant as o's caller.
func (s *Server) callTenant(ctx context.Context, o *fleetOp, tenant string, r api.Route, body []byte, params ...string) (do.Response, error) {
	return s.manager.Do(ctx, tenant, do.Request{Kind: do.KindAPI, Method: r.Method, Path: r.Path(tenant, params...), Headers: o.as, Body: body})
}

// fleetOperations answers FleetOperationsPath and FleetOperationsPath/{id}.
func (s *Server) fleetOperations(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, path string, role api.Role, claims *token.Claims) {
	id, one := strings.CutPrefix(path, api.FleetOperationsPath+"/")
	switch {
	case one && r.Method == http.MethodGet:
		s.fleetOperation(w, r, id, claims)
	case one:
		allow(w, r, path, "GET")
	case r.Method == http.MethodGet:
		s.listFleetOperations(w, claims)
	case r.Method == http.MethodPost:
		s.startFleetOperation(w, r, rc, role, claims)
	default:
		allow(w, r, path, "GET", "POST")
	}
}

// visible says whether a token may see an operation: one whose prefix is
// within its scope.
func visible(claims *token.Claims, prefix string) bool {
	if claims == nil {
		return true
	}
	p, err := api.ScopePrefix(claims.Scope, prefix, "")
	return err == nil && p == prefix
}

func (s *Server) startFleetOperation(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, role api.Role, claims *token.Claims) {
	if !api.RouteStartOp.Allows(role) { // what it gives each tenant
		writeError(w, api.Refuse(api.CodeForbidden, "a %s token may not POST %s: that needs admin or operator", string(role), api.FleetOperationsPath))
		return
	}
	b, e := s.readBody(rc, r)
	if e != nil {
		writeError(w, e)
		return
	}
	req, derr := api.DecodeFleetOperation(b)
	if derr != nil {
		writeError(w, api.Refuse(api.CodeInvalidRequest, "%v", derr))
		return
	}
	if e := api.CheckFleetOperation(req); e != nil {
		writeError(w, e)
		return
	}
	if claims != nil {
		p, e := api.ScopePrefix(claims.Scope, req.Prefix, "POST "+api.FleetOperationsPath+" (POST /v1/t/"+claims.Scope+"/operations acts in its tenant)")
		if e != nil {
			writeError(w, e)
			return
		}
		req.Prefix = p
	}
	dir := s.directory(w)
	if dir == nil {
		return
	}
	first := dir.Names(req.Prefix, "", 1)
	if len(first) == 0 {
		writeError(w, api.Refuse(api.CodeNotFound, "no tenant's name starts with %q: nothing to act on", req.Prefix))
		return
	}
	o := &fleetOp{req: req, as: requestHeaders(r, role, claims), misses: map[string]int{}, view: api.FleetOperation{Action: req.Action, Filter: req.Filter, Prefix: req.Prefix, State: "running",
		CreatedAt: time.UnixMilli(s.manager.Now()).UTC(), Operations: []api.TenantOperation{}}}
	// The first tenant judges the filter: its refusal refuses the whole
	// operation, which then never existed.
	if e := s.giveOne(r.Context(), o, first[0]); e != nil {
		writeError(w, e)
		return
	}
	f := &s.fleet
	f.mu.Lock()
	f.seq++
	o.view.ID = strconv.FormatInt(f.seq, 10)
	f.ops = append(f.ops, o)
	if len(f.ops) > api.MaxFleetOperations {
		if i := slices.IndexFunc(f.ops, func(x *fleetOp) bool { return x.view.State == "done" }); i >= 0 {
			f.ops = slices.Delete(f.ops, i, i+1)
		}
	}
	view := o.snapshot()
	f.mu.Unlock()
	go s.giveAll(o)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	w.Write(view.AppendJSON(nil))
}

// giveOne gives o to one tenant and records what it answered. The first
// tenant's 400 (the filter is not one a tenant takes) is returned, and o
// is not recorded; any other refusal is recorded as the tenant's.
func (s *Server) giveOne(ctx context.Context, o *fleetOp, tenant string) *api.Error {
	body := api.OperationRequest{Action: o.req.Action, Filter: o.req.Filter}.AppendJSON(nil)
	resp, err := s.callTenant(ctx, o, tenant, api.RouteStartOp, body)
	part := api.TenantOperation{Tenant: tenant}
	switch {
	case err != nil:
		part.State, part.Error = "refused", firstLine(err.Error())
	case resp.Status != http.StatusAccepted:
		var e api.Error
		json.Unmarshal(resp.Body, &e)
		if len(o.view.Operations) == 0 && resp.Status == http.StatusBadRequest {
			e.Status = resp.Status
			return &e
		}
		part.State, part.Error = "refused", fmt.Sprintf("%d %s: %s", resp.Status, e.Code, e.Message)
	default:
		var op api.Operation
		if err := json.Unmarshal(resp.Body, &op); err != nil {
			part.State, part.Error = "refused", "unreadable answer: "+err.Error()
			break
		}
		part = tenantPart(tenant, op)
	}
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	o.view.Operations = append(o.view.Operations, part)
	o.cursor = tenant
	o.recount(s.manager.Now())
	return nil
}

func tenantPart(tenant string, op api.Operation) api.TenantOperation {
	return api.TenantOperation{Tenant: tenant, ID: op.ID, State: op.State, Matched: op.Matched, Done: op.Done, Skipped: op.Skipped}
}

// fleetFollowEvery is how often the server reads the progress of the
// tenants' parts of an operation it gave them all.
const fleetFollowEvery = time.Second

// giveAll gives o to the rest of the prefix's tenants, a slice at a time,
// then follows their parts to the end.
func (s *Server) giveAll(o *fleetOp) {
	dir := s.manager.Directory()
	for {
		s.fleet.mu.Lock()
		cursor := o.cursor
		s.fleet.mu.Unlock()
		names := dir.Names(o.req.Prefix, cursor, api.FleetOperationSlice)
		for _, name := range names {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			s.giveOne(ctx, o, name)
			cancel()
		}
		if len(names) < api.FleetOperationSlice {
			s.fleet.mu.Lock()
			o.given = true
			o.recount(s.manager.Now())
			s.fleet.mu.Unlock()
			break
		}
	}
	// Followed to its end whether anyone reads it or not, so that a list
	// says done of one that is.
	for {
		s.fleet.mu.Lock()
		done := o.view.State == "done"
		s.fleet.mu.Unlock()
		if done || s.manager.Closed() {
			return
		}
		time.Sleep(fleetFollowEvery)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.refresh(ctx, o)
		cancel()
	}
}

// recount sums the tenants' figures (s.fleet.mu is held).
func (o *fleetOp) recount(now int64) {
	v := &o.view
	v.Tenants, v.Matched, v.Done, v.Skipped, v.Refused = int64(len(v.Operations)), 0, 0, 0, 0
	running := false
	for _, p := range v.Operations {
		v.Matched += p.Matched
		v.Done += p.Done
		v.Skipped += p.Skipped
		switch p.State {
		case "refused":
			v.Refused++
		case "done":
		default:
			running = true
		}
	}
	if o.given && !running && v.State != "done" {
		v.State = "done"
		at := time.UnixMilli(now).UTC()
		v.DoneAt = &at
	}
}

// snapshot is a copy of the view (s.fleet.mu is held).
func (o *fleetOp) snapshot() api.FleetOperation {
	v := o.view
	v.Operations = slices.Clone(v.Operations)
	return v
}

func (s *Server) find(id string, claims *token.Claims) (*fleetOp, *api.Error) {
	s.fleet.mu.Lock()
	defer s.fleet.mu.Unlock()
	for _, o := range s.fleet.ops {
		if o.view.ID == id && visible(claims, o.view.Prefix) {
			return o, nil
		}
	}
	return nil, api.Refuse(api.CodeNotFound, "operation %q does not exist", id)
}

// fleetOperation reads an operation, with the progress of up to
// FleetProgressReads of its tenants' operations not known to be done
// (reading a tenant's operation also runs its next slice).
func (s *Server) fleetOperation(w http.ResponseWriter, r *http.Request, id string, claims *token.Claims) {
	o, e := s.find(id, claims)
	if e != nil {
		writeError(w, e)
		return
	}
	s.refresh(r.Context(), o)
	s.fleet.mu.Lock()
	o.recount(s.manager.Now())
	v := o.snapshot()
	s.fleet.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(v.AppendJSON(nil))
}

// refresh reads the progress of up to FleetProgressReads of o's tenant
// parts not known to be done (reading a tenant's operation also runs its
// next slice), and sums them.
func (s *Server) refresh(ctx context.Context, o *fleetOp) {
	s.fleet.mu.Lock()
	var ask []api.TenantOperation
	for _, p := range o.view.Operations {
		if p.State == "running" && len(ask) < api.FleetProgressReads {
			ask = append(ask, p)
		}
	}
	s.fleet.mu.Unlock()
	for _, p := range ask {
		resp, err := s.callTenant(ctx, o, p.Tenant, api.RouteGetOperation, nil, p.ID)
		var op api.Operation
		part := p
		s.fleet.mu.Lock()
		switch {
		case err == nil && (resp.Status == http.StatusNotFound || resp.Status == http.StatusGone):
			// The tenant was erased, or imported over: its part is over.
			var e api.Error
			json.Unmarshal(resp.Body, &e)
			part.State, part.Error = "refused", fmt.Sprintf("its operation is gone (%d %s: %s)", resp.Status, e.Code, e.Message)
		case err != nil || resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &op) != nil:
			// Read again next time, up to maxFleetMisses in a row.
			if o.misses[p.Tenant]++; o.misses[p.Tenant] < maxFleetMisses {
				s.fleet.mu.Unlock()
				continue
			}
			why := fmt.Sprintf("status %d", resp.Status)
			if err != nil {
				why = firstLine(err.Error())
			}
			part.State, part.Error = "refused", fmt.Sprintf("its operation could not be read %d times in a row (%s)", maxFleetMisses, why)
		default:
			part = tenantPart(p.Tenant, op)
		}
		delete(o.misses, p.Tenant)
		for i := range o.view.Operations {
			// A part another read ended stays ended (two reads may cross).
			if q := &o.view.Operations[i]; q.Tenant == p.Tenant && q.State == "running" {
				*q = part
			}
		}
		s.fleet.mu.Unlock()
	}
	s.fleet.mu.Lock()
	o.recount(s.manager.Now())
	s.fleet.mu.Unlock()
}

func (s *Server) listFleetOperations(w http.ResponseWriter, claims *token.Claims) {
	s.fleet.mu.Lock()
	resp := api.FleetOperationsResponse{Operations: []api.FleetOperation{}}
	for i := len(s.fleet.ops) - 1; i >= 0; i-- {
		if o := s.fleet.ops[i]; visible(claims, o.view.Prefix) {
			v := o.snapshot()
			v.Operations = nil
			resp.Operations = append(resp.Operations, v)
		}
	}
	s.fleet.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Write(resp.AppendJSON(nil))
}
