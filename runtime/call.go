package runtime

import (
	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/runtime/internal/usage"
)

// call is one request on its way through the tenant: what its frame said
// and what its route decided, carried through the phases of answer and
// overwritten whole when the next request starts (the Tenant keeps its
// room, Tenant.cur, so that no request allocates one). No request sees
// another's decisions and nothing needs resetting field by field; what
// outlives a request is the Tenant's.
type call struct {
	req do.Request
	// now is the host's clock for the request, read once its route and
	// storage are ready (admit), before its budget is checked.
	now int64

	// What the host's headers say of the request.
	//
	// dbBytes is the request's stile-db-bytes (GET /storage); heldTenant
	// and heldToken the claims the host holds for the tenant and for the
	// request's token (stile-held).
	dbBytes               string
	heldTenant, heldToken int
	// mark is the host's running count of the object's calls
	// (stile-usage; zero: it counts none).
	mark usage.Mark

	// What admission decided.
	//
	// route is the route the request matched ("" before a match, and for
	// an alarm): the response names it in stile-route, for the host's logs
	// and metrics. run is its work in the transaction; noticedBy who
	// noticed the due work it applies ("request" or "alarm"). creating
	// says the request creates the tenant.
	route     api.Route
	run       route
	noticedBy string
	creating  bool
	// fresh says a query asked for freshness (min_seq): the projections
	// catch up first, if that is due.
	fresh bool

	// What the transaction decided, applied after it committed.
	//
	// dueApplied says the request applied due work at all, dueEnded that
	// the due work expired a lease (which may have ended a job: the
	// response says FlagFinished).
	dueApplied, dueEnded bool
	// erasing says the request erases the tenant (erase.go).
	erasing bool
	// importBegun is the mark a first import page sets (the tenant is
	// held for the import once it commits); importDone says the request
	// imported an export's last page, or aborted an import: once it
	// commits, the tenant forgets what it read (reset).
	importBegun string
	importDone  bool
	// pushAgain says an ended push asked to look for ready work again.
	pushAgain bool
	// retention is a PUT /retention's policy, in force once it commits;
	// budget a PUT or DELETE /budget's.
	retention *pendingRetention
	budget    *pendingBudget
	// recorded is the usage row the transaction wrote (nil: none), the
	// tenant's once it commits.
	recorded *usage.Recorded

	// The answer.
	//
	// res is what the route decided, body its encoded body (made inside
	// the transaction), committed whether the transaction committed.
	res       result
	body      []byte
	committed bool
}

// start makes c the call of req, forgetting the previous request's, and
// reads what its frame says; body is a buffer to reuse for the answer's
// body.
func (c *call) start(req do.Request, body []byte) {
	*c = call{req: req, body: body[:0]}
	c.dbBytes = req.Headers.Get(do.HeaderDBBytes)
	c.heldTenant, c.heldToken = do.ParseHeldCounts(req.Headers.Get(do.HeaderHeld))
	c.mark, _ = usage.ParseMark(req.Headers.Get(do.HeaderUsage))
}
