package runtime

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
	"github.com/stile-run/stile/projection"
	"github.com/stile-run/stile/runtime/internal/projectionstore"
)

// ---- status, rebuild ----

func (t *Tenant) projectionsStatus() route {
	return func(now int64) (result, error) {
		gens, err := t.projections.All()
		if err != nil {
			return result{}, err
		}
		head, err := t.events.Head()
		if err != nil {
			return result{}, err
		}
		resp := api.ProjectionsResponse{Projections: make([]api.ProjectionStatus, 0, len(t.app.projections))}
		for _, p := range t.app.projections {
			st := api.ProjectionStatus{Name: p.Name, Types: p.Events, Head: head}
			for _, g := range gens {
				if g.Name != p.Name {
					continue
				}
				gs, err := t.generationStatus(p, g, now)
				if err != nil {
					return result{}, err
				}
				if g.Role == projectionstore.Live {
					st.Live = &gs
				} else {
					st.Rebuild = &gs
				}
			}
			resp.Projections = append(resp.Projections, st)
		}
		return result{status: statusOK, body: resp.AppendJSON}, nil
	}
}

func (t *Tenant) generationStatus(p *projectionReg, g projectionstore.Generation, now int64) (api.GenerationStatus, error) {
	lag, err := t.events.CountAfter(g.Checkpoint, p.Events, api.MaxLagCount)
	if err != nil {
		return api.GenerationStatus{}, err
	}
	return api.GenerationStatus{Generation: g.Generation, Checkpoint: g.Checkpoint, Lag: lag, Status: statusOf(g, lag > 0),
		Failures: g.Failures, Error: g.Error, ErrorSeq: g.ErrorSeq, RetryAt: tsPtr(g.RetryAt),
		Outdated: g.Fingerprint != p.fingerprint}, nil
}

// statusOf is a generation's status as GET /projections and a query's
// answer say it: stalled, catching_up when events of its types wait, else
// current.
func statusOf(g projectionstore.Generation, waiting bool) string {
	switch {
	case g.Stalled():
		return "stalled"
	case waiting:
		return "catching_up"
	}
	return "current"
}

func (t *Tenant) rebuildProjection(name string) (route, *api.Error) {
	p, ok := t.app.projectionBy[name]
	if !ok {
		return nil, api.Refuse(api.CodeNotFound, "no projection %q is registered in this module", name)
	}
	return func(now int64) (result, error) {
		gens, err := t.projections.All()
		if err != nil {
			return result{}, err
		}
		for _, g := range gens {
			if g.Name == name && g.Role == projectionstore.Building {
				// A rebuild in progress starts over.
				if err := t.dropGeneration(p, g.Generation); err != nil {
					return result{}, err
				}
			}
		}
		if err := t.createGeneration(now, p, projectionstore.Building); err != nil {
			return result{}, err
		}
		t.proj.due = now
		route := t.projectionsStatus()
		res, err := route(now)
		res.status = statusAccepted
		return res, err
	}, nil
}

// ---- queries ----

func (t *Tenant) runQuery(c *call, name, raw string) (route, *api.Error) {
	q, ok := t.app.queries[name]
	if !ok {
		return nil, api.Refuse(api.CodeNotFound, "no query %q is registered in this module", name)
	}
	params, e := query(raw)
	if e != nil {
		return nil, e
	}
	minSeq, e := position(params, api.MinSeqParam, 0)
	if e != nil {
		return nil, e
	}
	delete(params, api.MinSeqParam)
	c.fresh = minSeq > 0
	args := make([]any, len(q.Params))
	for i, p := range q.Params {
		v, ok := params[p]
		if !ok {
			return nil, api.Refuse(api.CodeInvalidRequest, "missing query parameter %q: query %s takes %v", p, name, q.Params)
		}
		args[i] = v
	}
	if len(params) > len(q.Params) {
		takes := "no parameters"
		if len(q.Params) > 0 {
			takes = strings.Join(q.Params, ", ")
		}
		return nil, api.Refuse(api.CodeInvalidRequest, "unknown query parameters: query %s takes %s", name, takes)
	}
	p := t.app.projectionBy[q.Projection]
	return func(now int64) (result, error) {
		gens, err := t.projections.All()
		if err != nil {
			return result{}, err
		}
		var live *projectionstore.Generation
		for i, g := range gens {
			if g.Name == p.Name && g.Role == projectionstore.Live {
				live = &gens[i]
			}
		}
		if live == nil {
			return result{}, printf.Errorf("projection %s has no live generation", p.Name)
		}
		fresh, err := t.queryProjection(p, *live)
		if err != nil {
			return result{}, err
		}
		if fresh.PendingFrom != 0 && fresh.PendingFrom <= minSeq {
			return result{}, behind(name, fresh, minSeq)
		}
		sql, err := projection.Check(q.SQL, projection.Read, p.names(live.Generation))
		if err != nil {
			return result{}, err
		}
		rows, err := t.db.Query("SELECT * FROM ("+sql+")"+do.Limit(q.MaxRows+1), args...)
		if err != nil {
			return result{}, api.Refuse(api.CodeQueryFailed, "query %s failed: %s", name, oneLine(err.Error()))
		}
		if rows.Columns() != len(q.Columns) {
			return result{}, printf.Errorf("query %s returns %d columns but names %d", name, rows.Columns(), len(q.Columns))
		}
		out := api.QueryResult{Projection: &fresh}
		out.Rows = []json.RawMessage{}
		for rows.Next() {
			if len(out.Rows) == q.MaxRows {
				out.Truncated = true
				break
			}
			b := []byte{'{'}
			for i, c := range q.Columns {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonwire.AppendString(b, c)
				b = append(b, ':')
				b = appendValue(b, rows.Value(i))
			}
			out.Rows = append(out.Rows, append(b, '}'))
		}
		return result{status: statusOK, body: out.AppendJSON, headers: do.Headers{
			{Name: api.HeaderProjectionCheckpoint, Value: strconv.FormatInt(fresh.Checkpoint, 10)},
			{Name: api.HeaderProjectionStatus, Value: fresh.Status}}}, rows.Err()
	}, nil
}

// queryProjection is how far g, the live generation of p, has applied
// the log, as a query's answer says it: its checkpoint, and the first
// event of its types after it (one row read per type; the lag itself,
// which GET /projections counts, is not).
func (t *Tenant) queryProjection(p *projectionReg, g projectionstore.Generation) (api.QueryProjection, error) {
	next, _, err := t.events.Read(g.Checkpoint, p.Events, 1, 0)
	if err != nil {
		return api.QueryProjection{}, err
	}
	st := api.QueryProjection{Name: p.Name, Checkpoint: g.Checkpoint, Status: statusOf(g, len(next) > 0),
		Error: g.Error, ErrorSeq: g.ErrorSeq, RetryAt: tsPtr(g.RetryAt)}
	if len(next) > 0 {
		st.PendingFrom = next[0].Seq
	}
	if g.Fingerprint != p.fingerprint && st.PendingFrom != 0 {
		// Built with another definition: frozen, serving reads until the
		// rebuild that replaces it reaches the head.
		st.Status = "rebuilding"
	}
	return st, nil
}

// behind refuses a query whose projection has not applied the events up
// to minSeq.
func behind(query string, st api.QueryProjection, minSeq int64) *api.Error {
	switch st.Status {
	case "stalled":
		retry := "later"
		if st.RetryAt != nil {
			retry = "at " + st.RetryAt.UTC().Format(time.RFC3339Nano)
		}
		return api.Refuse(api.CodeProjectionBehind, "query %s: projection %s is stalled at event %d, short of min_seq %d (%s); it retries %s",
			query, st.Name, st.ErrorSeq, minSeq, st.Error, retry)
	case "rebuilding":
		return api.Refuse(api.CodeProjectionBehind, "query %s: projection %s is being rebuilt for its new definition, and reads see the old one, applied up to %d, short of min_seq %d, until the rebuild reaches the head (GET /projections shows its progress)",
			query, st.Name, st.Checkpoint, minSeq)
	}
	return api.Refuse(api.CodeProjectionBehind, "query %s: projection %s has applied the log up to %d and not yet event %d, short of min_seq %d: ask again shortly",
		query, st.Name, st.Checkpoint, st.PendingFrom, minSeq)
}

// appendValue writes a SQLite value as JSON: numbers, strings, null, and
// blobs in hex (base64 would add its package to every module).
func appendValue(b []byte, v do.Value) []byte {
	switch v.Kind {
	case do.KindInt:
		return strconv.AppendInt(b, v.Int, 10)
	case do.KindFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return append(b, "null"...)
		}
		return strconv.AppendFloat(b, v.Float, 'g', -1, 64)
	case do.KindText:
		return jsonwire.AppendString(b, string(v.Bytes))
	case do.KindBlob:
		return jsonwire.AppendString(b, hex.EncodeToString(v.Bytes))
	}
	return append(b, "null"...)
}
