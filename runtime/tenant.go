package runtime

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/jobs"
	"github.com/stile-run/stile/schema"
)

// Tenant serves the API of one tenant: it is what a tenant module does for
// the object that runs it. A wasip1 module holds one; the native host holds
// one per tenant. It is not safe for concurrent use: hosts serialize calls.
type Tenant struct {
	app   *App
	name  string // learnt from the first API request's path
	db    *do.DB
	store *jobs.Store

	migrated      bool
	schemaVersion int64

	// nextDue caches the earliest due time of committed state, refreshed
	// after every request; before it, due work is skipped cheaply.
	nextDue  int64
	dueKnown bool

	out  []byte // the response frame, reused
	body []byte // the response body, reused
}

// NewTenant returns a tenant serving app's API over h.
func NewTenant(app *App, h do.Host) *Tenant {
	db := do.NewDB(h)
	return &Tenant{app: app, db: db, store: jobs.New(db)}
}

// Handle serves one request frame and returns the response frame. The
// returned slice is valid until the next call.
func (t *Tenant) Handle(frame []byte) []byte {
	var resp do.Response
	req, err := do.DecodeRequest(frame)
	if err != nil {
		resp = errorResponse(statusBadRequest, api.CodeInvalidRequest, "the host sent a malformed request frame: "+err.Error())
	} else {
		resp = t.serve(req)
	}
	t.out = do.AppendResponse(t.out[:0], resp)
	return t.out
}

// jsonBody is a response body: the api types encode themselves.
type jsonBody interface{ AppendJSON([]byte) []byte }

// result is what a route decided.
type result struct {
	status int
	body   jsonBody // nil for no body
	wake   bool     // committed work that may be claimable now
	holdMs int64
}

// route runs inside the request's transaction.
type route func(now int64) (result, error)

var errNoServe = errors.New("this module never called runtime.Serve")

func (t *Tenant) serve(req do.Request) do.Response {
	if t.app == nil {
		return errorResponse(statusInternal, api.CodeInternal, errNoServe.Error())
	}
	var run route
	noticedBy := "request"
	switch req.Kind {
	case do.KindAlarm:
		noticedBy = "alarm"
		run = func(int64) (result, error) { return result{status: statusOK}, nil }
	case do.KindAPI:
		var apiErr *apiError
		run, apiErr = t.match(req)
		if apiErr != nil {
			return errorResponse(apiErr.status, apiErr.code, apiErr.msg)
		}
	default:
		return errorResponse(statusBadRequest, api.CodeInvalidRequest, fmt.Sprintf("unknown request kind %d", req.Kind))
	}
	// Only a request that passed validation migrates: a refused one (a
	// mistyped tenant name, say) leaves the object's storage untouched.
	if !t.migrated {
		if err := t.migrate(); err != nil {
			return errorResponse(statusInternal, api.CodeInternal, err.Error())
		}
	}

	now := t.db.Now()
	var res result
	err := t.db.Tx(func() error {
		due, err := t.applyDue(now, noticedBy)
		if err != nil {
			return err
		}
		res, err = run(now)
		res.wake = res.wake || due.Promoted > 0
		return err
	})
	var resp do.Response
	if err != nil {
		resp = errorResponse(statusInternal, api.CodeInternal, "the request was rolled back: "+err.Error())
	} else {
		resp = do.Response{Status: res.status, HoldMs: res.holdMs}
		if res.wake {
			resp.Flags |= do.FlagWake
		}
		if res.body != nil {
			t.body = res.body.AppendJSON(t.body[:0])
			resp.Body = t.body
		}
	}
	// The alarm follows committed state, whatever the request did.
	if err := t.refreshDue(); err != nil {
		return errorResponse(statusInternal, api.CodeInternal, err.Error())
	}
	resp.AlarmAt = t.nextDue
	return resp
}

func (t *Tenant) migrate() error {
	if _, err := schema.Apply(t.db, schema.Ledger, schema.Migrations()); err != nil {
		return fmt.Errorf("migrate tenant schema: %w", err)
	}
	t.schemaVersion = int64(len(schema.Migrations()))
	t.migrated = true
	return nil
}

func (t *Tenant) applyDue(now int64, noticedBy string) (jobs.DueResult, error) {
	if t.dueKnown && (t.nextDue == 0 || now < t.nextDue) {
		return jobs.DueResult{}, nil
	}
	return t.store.ApplyDue(now, noticedBy, mrandFloat)
}

func (t *Tenant) refreshDue() error {
	at, err := t.store.NextDue()
	if err != nil {
		t.dueKnown = false
		return err
	}
	t.nextDue, t.dueKnown = at, true
	return nil
}

// mrandFloat is jitter for retry backoffs; it needs spread, not secrecy.
func mrandFloat() float64 { return mrand.Float64() }

// newNonce is a claim's secret: 128 random bits from the host (WASI
// random_get inside a module).
func newNonce() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("stile: no randomness from the host: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

func errorResponse(status int, code, msg string) do.Response {
	return do.Response{Status: status, Body: api.Error{Code: code, Message: msg}.AppendJSON(nil)}
}
