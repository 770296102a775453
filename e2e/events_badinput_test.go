package e2e_test

import (
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/e2e/testapp"
)

// eventsSnapshot is what a refused request must leave as it was: the log,
// the reactions' checkpoints and inboxes, the projections.
type eventsSnapshot struct {
	Events      api.EventsResponse
	Reactions   api.ReactionsResponse
	Projections api.ProjectionsResponse
}

func (s *scenario) eventsSnapshot() eventsSnapshot {
	s.t.Helper()
	var snap eventsSnapshot
	var err error
	snap.Events, err = s.ten.Events(s.ctx, 0, 1000)
	require.NoError(s.t, err)
	snap.Reactions, err = s.ten.Reactions(s.ctx)
	require.NoError(s.t, err)
	snap.Projections, err = s.ten.Projections(s.ctx)
	require.NoError(s.t, err)
	return snap
}

// scenarioEventsBadInput: malformed, oversized, unknown and forged
// requests to the event, command, reaction, projection and query routes
// are refused with one line and the right status, and write nothing.
func scenarioEventsBadInput(s *scenario) {
	t := s.t
	s.createPayment("p1", 10)
	s.note("notes", testapp.NoteData{N: 1})
	d := s.deliveries("w", 10, 2, testapp.AuditPolicy)
	settled, err := s.ten.Settle(s.ctx, succeeded(d[0]), succeeded(d[1]))
	require.NoError(t, err)
	for _, r := range settled {
		require.Nil(t, r.Error)
	}
	s.quiet()
	before := s.eventsSnapshot()

	base := "/v1/t/" + s.ten.Name()
	bigData := `{"type":"noted","data":"` + strings.Repeat("x", api.MaxEventBytes) + `"}`
	tooMany := `{"events":[` + strings.TrimSuffix(strings.Repeat(`{"type":"noted"},`, api.MaxAppendEvents+1), ",") + `]}`
	tooManySettlements := `{"settlements":[` + strings.TrimSuffix(strings.Repeat(
		`{"handler":"audit","seq":1,"claim_id":"x","outcome":"succeeded"},`, api.MaxSettlements+1), ",") + `]}`
	cases := []refusal{
		// Appends.
		{"append: malformed JSON", "POST", base + "/streams/notes", `{"events":[`, 400, api.CodeInvalidJSON},
		{"append: unknown field", "POST", base + "/streams/notes", `{"events":[{"type":"noted"}],"colour":1}`, 400, api.CodeInvalidJSON},
		{"append: no events", "POST", base + "/streams/notes", `{"events":[]}`, 400, api.CodeInvalidRequest},
		{"append: event without type", "POST", base + "/streams/notes", `{"events":[{"data":{}}]}`, 400, api.CodeInvalidRequest},
		{"append: bad type", "POST", base + "/streams/notes", `{"events":[{"type":"no spaces"}]}`, 400, api.CodeInvalidRequest},
		{"append: reserved type", "POST", base + "/streams/notes", `{"events":[{"type":"stile.deadline:x"}]}`, 400, api.CodeInvalidRequest},
		{"append: data not JSON", "POST", base + "/streams/notes", `{"events":[{"type":"noted","data":{x}}]}`, 400, api.CodeInvalidJSON},
		{"append: data over 1 MiB", "POST", base + "/streams/notes", `{"events":[` + bigData + `]}`, 400, api.CodeTooLarge},
		{"append: too many events", "POST", base + "/streams/notes", tooMany, 400, api.CodeInvalidRequest},
		{"append: negative expected version", "POST", base + "/streams/notes", `{"expected_version":-2,"events":[{"type":"noted"}]}`, 400, api.CodeInvalidRequest},
		{"append: wrong expected version", "POST", base + "/streams/notes", `{"expected_version":7,"events":[{"type":"noted"}]}`, 409, api.CodeVersionConflict},
		{"append: bad stream name", "POST", base + "/streams/bad%20stream", `{"events":[{"type":"noted"}]}`, 400, api.CodeInvalidRequest},
		{"append: reserved stream", "POST", base + "/streams/stile.x", `{"events":[{"type":"noted"}]}`, 400, api.CodeInvalidRequest},
		// Reads.
		{"read: bad after", "GET", base + "/events?after=x", ``, 400, api.CodeInvalidRequest},
		{"read: limit over 1000", "GET", base + "/events?limit=1001", ``, 400, api.CodeInvalidRequest},
		{"read: repeated parameter", "GET", base + "/events?after=1&after=2", ``, 400, api.CodeInvalidRequest},
		{"read: unknown parameter", "GET", base + "/events?colour=red", ``, 400, api.CodeInvalidRequest},
		{"read: type listed twice", "GET", base + "/events?types=Noted,Noted", ``, 400, api.CodeInvalidRequest},
		{"read stream: bad from_version", "GET", base + "/streams/notes?from_version=-1", ``, 400, api.CodeInvalidRequest},
		// Commands.
		{"command: malformed JSON", "POST", base + "/commands", `{"id":`, 400, api.CodeInvalidJSON},
		{"command: missing id", "POST", base + "/commands", `{"aggregate":"payment","aggregate_id":"p2","type":"Create"}`, 400, api.CodeInvalidRequest},
		{"command: bad id", "POST", base + "/commands", `{"id":"a b","aggregate":"payment","aggregate_id":"p2","type":"Create"}`, 400, api.CodeInvalidRequest},
		{"command: unknown aggregate", "POST", base + "/commands", `{"id":"c1","aggregate":"invoice","aggregate_id":"p2","type":"Create"}`, 400, api.CodeUnknownAggregate},
		{"command: missing aggregate id", "POST", base + "/commands", `{"id":"c1","aggregate":"payment","type":"Create"}`, 400, api.CodeInvalidRequest},
		{"command: refused by the aggregate", "POST", base + "/commands", `{"id":"c1","aggregate":"payment","aggregate_id":"p1","type":"Create","data":{"amount":1}}`, 422, api.CodeCommandRejected},
		{"command: panicking aggregate", "POST", base + "/commands", `{"id":"c2","aggregate":"payment","aggregate_id":"p1","type":"Explode"}`, 500, api.CodeDecidePanicked},
		{"command: id reused", "POST", base + "/commands", `{"id":"create-p1","aggregate":"payment","aggregate_id":"p9","type":"Create","data":{"amount":1}}`, 409, api.CodeCommandIDReused},
		{"command: data not JSON", "POST", base + "/commands", `{"id":"c3","aggregate":"payment","aggregate_id":"p2","type":"Create","data":[}`, 400, api.CodeInvalidJSON},
		// Reactions.
		{"claim: missing worker", "POST", base + "/reactions/claims", `{}`, 400, api.CodeInvalidRequest},
		{"claim: unknown handler", "POST", base + "/reactions/claims", `{"worker":"w","handlers":["nope"]}`, 400, api.CodeUnknownHandler},
		{"claim: over the limit", "POST", base + "/reactions/claims", `{"worker":"w","limit":101}`, 400, api.CodeInvalidRequest},
		{"claim: limit 0", "POST", base + "/reactions/claims", `{"worker":"w","limit":0}`, 400, api.CodeInvalidRequest},
		{"claim: waits too long", "POST", base + "/reactions/claims", `{"worker":"w","wait_ms":60001}`, 400, api.CodeInvalidRequest},
		{"settle: malformed JSON", "POST", base + "/reactions/settle", `{"settlements":[{`, 400, api.CodeInvalidJSON},
		{"settle: none", "POST", base + "/reactions/settle", `{"settlements":[]}`, 400, api.CodeInvalidRequest},
		{"settle: too many", "POST", base + "/reactions/settle", tooManySettlements, 400, api.CodeInvalidRequest},
		{"settle: unknown handler", "POST", base + "/reactions/settle", `{"settlements":[{"handler":"nope","seq":1,"claim_id":"x","outcome":"succeeded"}]}`, 400, api.CodeUnknownHandler},
		{"settle: bad outcome", "POST", base + "/reactions/settle", `{"settlements":[{"handler":"audit","seq":1,"claim_id":"x","outcome":"maybe"}]}`, 400, api.CodeInvalidRequest},
		{"skip: unknown handler", "POST", base + "/reactions/nope/skip", `{"seq":1,"reason":"x"}`, 404, api.CodeNotFound},
		{"skip: nothing stuck", "POST", base + "/reactions/audit/skip", `{"seq":1,"reason":"x"}`, 409, api.CodeNotStuck},
		// Projections and queries.
		{"rebuild: unknown projection", "POST", base + "/projections/nope/rebuild", ``, 404, api.CodeNotFound},
		{"query: unknown", "GET", base + "/queries/nope", ``, 404, api.CodeNotFound},
		{"query: missing parameter", "GET", base + "/queries/notes_of", ``, 400, api.CodeInvalidRequest},
		{"query: unknown parameter", "GET", base + "/queries/notes_of?stream=notes&colour=red", ``, 400, api.CodeInvalidRequest},
		{"query: repeated parameter", "GET", base + "/queries/notes_of?stream=a&stream=b", ``, 400, api.CodeInvalidRequest},
		{"wrong method", "GET", base + "/reactions/settle", ``, 405, api.CodeMethodNotAllowed},
	}
	s.requireRefused(cases)

	// Forged and stale settlements are refused one by one, in a 200.
	forged, err := s.ten.Settle(s.ctx,
		api.Settlement{Handler: testapp.AuditPolicy, Seq: d[0].Event.Seq, ClaimID: d[0].ClaimID, Outcome: api.OutcomeFailed, Error: "late"},
		api.Settlement{Handler: testapp.AuditPolicy, Seq: d[0].Event.Seq, ClaimID: "forged", Outcome: api.OutcomeSucceeded},
		api.Settlement{Handler: testapp.RefundPolicy, Seq: d[0].Event.Seq, ClaimID: "forged", Outcome: api.OutcomeSucceeded,
			Commands: []api.Command{{ID: "sneaky", Aggregate: "payment", AggregateID: "p1", Type: "Capture"}}})
	require.NoError(t, err)
	require.Len(t, forged, 3)
	for i, code := range []api.Code{api.CodeAlreadySettled, api.CodeClaimTakenOver, api.CodeUnknownClaim} {
		require.NotNil(t, forged[i].Error, "settlement %d", i)
		require.Equal(t, code, forged[i].Error.Code, "settlement %d: %s", i, forged[i].Error.Message)
	}

	require.Equal(t, before, s.eventsSnapshot(), "no refused request wrote anything")
	_, err = s.ten.GetCommand(s.ctx, "sneaky")
	requireCode(t, err, 404, api.CodeNotFound)
	for _, id := range []string{"c1", "c2", "c3"} {
		_, err = s.ten.GetCommand(s.ctx, id)
		requireCode(t, err, 404, api.CodeNotFound)
	}
}
