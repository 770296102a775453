package runtime

import (
	"slices"
	"strconv"
	"strings"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/runtime/internal/eventstore"
)

// ---- the event log ----

func validStream(stream string) *api.Error {
	if !api.ValidStream(stream) {
		return api.Refuse(api.CodeInvalidRequest, "stream %q is invalid: use %s", stream, api.StreamRule)
	}
	return nil
}

func (t *Tenant) appendEvents(stream string, body []byte) (route, *api.Error) {
	if e := validStream(stream); e != nil {
		return nil, e
	}
	if strings.HasPrefix(stream, "stile.") {
		return nil, api.Refuse(api.CodeInvalidRequest, "stream %q is reserved: streams starting with stile. are Stile's", stream)
	}
	r, err := api.DecodeAppend(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := batchSize(len(r.Events), api.MaxAppendEvents, "events"); e != nil {
		return nil, e
	}
	drafts := make([]eventstore.Draft, len(r.Events))
	for i, e := range r.Events {
		if code, msg := t.app.eventProblem(e); msg != "" {
			return nil, api.Refuse(code, "events[%d]: %s", i, msg)
		}
		drafts[i] = eventstore.Draft{Type: e.Type, Data: e.Data}
	}
	expected := int64(eventstore.Any)
	if r.ExpectedVersion != nil {
		if *r.ExpectedVersion < 0 {
			return nil, api.Refuse(api.CodeInvalidRequest, "expected_version %d is negative: use 0 for a new stream, or leave it out", *r.ExpectedVersion)
		}
		expected = *r.ExpectedVersion
	}
	return func(now int64) (result, error) {
		first, last, version, err := t.events.Append(now, stream, expected, drafts, "")
		if err != nil {
			return result{}, err
		}
		t.reactions.Wake()
		return result{status: statusCreated, body: api.AppendResponse{Stream: stream, Version: version, FirstSeq: first, LastSeq: last}.AppendJSON}, nil
	}, nil
}

// readLimit reads the limit= parameter of a read.
func readLimit(q map[string]string) (int, *api.Error) {
	l, ok := q["limit"]
	if !ok {
		return 100, nil
	}
	n, err := strconv.Atoi(l)
	if err != nil || n < 1 || n > api.MaxReadEvents {
		return 0, api.Refuse(api.CodeInvalidRequest, "limit=%q is outside 1-%d", l, api.MaxReadEvents)
	}
	return n, nil
}

// position reads a non-negative integer parameter.
func position(q map[string]string, name string, def int64) (int64, *api.Error) {
	v, ok := q[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > 1<<53-1 {
		return 0, api.Refuse(api.CodeInvalidRequest, "%s=%q is not a position in the log", name, v)
	}
	return n, nil
}

func onlyParams(q map[string]string, allowed ...string) *api.Error {
	for k := range q {
		found := false
		for _, a := range allowed {
			found = found || k == a
		}
		if !found {
			return api.Refuse(api.CodeInvalidRequest, "unknown query parameter %q: use %s", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func (t *Tenant) readStream(stream, raw string) (route, *api.Error) {
	if e := validStream(stream); e != nil {
		return nil, e
	}
	q, e := query(raw)
	if e != nil {
		return nil, e
	}
	if e := onlyParams(q, "from_version", "limit"); e != nil {
		return nil, e
	}
	from, e := position(q, "from_version", 1)
	if e != nil {
		return nil, e
	}
	limit, e := readLimit(q)
	if e != nil {
		return nil, e
	}
	return func(int64) (result, error) {
		evs, cut, err := t.events.ReadStream(stream, from, limit, api.MaxAnswerBytes)
		if err != nil {
			return result{}, err
		}
		resp, err := t.eventsPage(evs, limit)
		if len(evs) == limit || cut {
			resp.Next = evs[len(evs)-1].Version + 1
		}
		return result{status: statusOK, body: resp.AppendJSON}, err
	}, nil
}

func (t *Tenant) readEvents(raw string) (route, *api.Error) {
	q, e := query(raw)
	if e != nil {
		return nil, e
	}
	if e := onlyParams(q, "after", "limit", "types"); e != nil {
		return nil, e
	}
	after, e := position(q, "after", 0)
	if e != nil {
		return nil, e
	}
	limit, e := readLimit(q)
	if e != nil {
		return nil, e
	}
	var types []string
	if v := q["types"]; v != "" {
		types = strings.Split(v, ",")
		if len(types) > api.MaxClaimKinds {
			return nil, api.Refuse(api.CodeInvalidRequest, "%d types exceed the limit of %d", len(types), api.MaxClaimKinds)
		}
		for i, ty := range types {
			if !api.ValidName(ty) {
				return nil, api.Refuse(api.CodeInvalidRequest, "event type %q is invalid: use %s", ty, api.NameRule)
			}
			if slices.Contains(types[:i], ty) {
				return nil, api.Refuse(api.CodeInvalidRequest, "event type %q is listed twice", ty)
			}
		}
	}
	return func(int64) (result, error) {
		evs, cut, err := t.events.Read(after, types, limit, api.MaxAnswerBytes)
		if err != nil {
			return result{}, err
		}
		resp, err := t.eventsPage(evs, limit)
		if len(evs) == limit || cut {
			resp.Next = evs[len(evs)-1].Seq
		}
		return result{status: statusOK, body: resp.AppendJSON}, err
	}, nil
}

func (t *Tenant) eventsPage(evs []eventstore.Event, limit int) (api.EventsResponse, error) {
	head, err := t.events.Head()
	resp := api.EventsResponse{Events: make([]api.Event, len(evs)), Head: head}
	for i, e := range evs {
		resp.Events[i] = eventView(e)
	}
	return resp, err
}

// ---- commands ----

func (t *Tenant) command(body []byte) (route, *api.Error) {
	c, err := api.DecodeCommand(body)
	if err != nil {
		return nil, decodeErr(err)
	}
	if e := t.validateCommand("", c); e != nil {
		return nil, e
	}
	return func(now int64) (result, error) {
		res, ref, err := t.runCommand(now, c, "api")
		if err != nil {
			return result{}, err
		}
		if ref != nil {
			return result{}, ref
		}
		status := statusCreated
		if res.Duplicate {
			status = statusOK
		}
		return result{status: status, body: res.AppendJSON}, nil
	}, nil
}

func (t *Tenant) getCommand(id string) route {
	return func(int64) (result, error) {
		rec, found, err := t.events.Command(id)
		if err != nil {
			return result{}, err
		}
		if !found {
			return result{}, api.Refuse(api.CodeNotFound, "command %q was never applied", id)
		}
		evs, err := t.events.ReadRange(rec.FirstSeq, rec.LastSeq)
		if err != nil {
			return result{}, err
		}
		jobIDs, _ := jsonwire.DecodeStrings(rec.JobIDs)
		return result{status: statusOK, body: commandResult(rec.ID, api.StreamOf(rec.Aggregate, rec.AggregateID), rec.Version, evs, jobIDs, false).AppendJSON}, nil
	}
}
