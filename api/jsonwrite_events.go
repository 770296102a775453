package api

// Writers of the event and reaction responses; see jsonwrite.go.

// AppendJSON appends c as JSON.
func (c Command) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("id", c.ID)
	o.str("aggregate", c.Aggregate)
	o.str("aggregate_id", c.AggregateID)
	o.str("type", c.Type)
	o.rawOmit("data", c.Data)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (c Command) MarshalJSON() ([]byte, error) { return c.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r AppendResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("stream", r.Stream)
	o.int("version", r.Version)
	o.int("first_seq", r.FirstSeq)
	o.int("last_seq", r.LastSeq)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r AppendResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends e as JSON.
func (e Event) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.int("seq", e.Seq)
	o.str("stream", e.Stream)
	o.int("version", e.Version)
	o.str("type", e.Type)
	o.raw("data", e.Data)
	o.strOmit("command_id", e.CommandID)
	o.time("at", e.At)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r EventsResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("events")
	o.b = appendArray(o.b, r.Events)
	o.intOmit("next", r.Next)
	o.int("head", r.Head)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r EventsResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r CommandResult) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("id", r.ID)
	o.str("stream", r.Stream)
	o.int("version", r.Version)
	o.key("events")
	o.b = appendArray(o.b, r.Events)
	if len(r.JobIDs) > 0 {
		o.strings("job_ids", r.JobIDs)
	}
	if r.Duplicate {
		o.bool("duplicate", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r CommandResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends d as JSON.
func (d Delivery) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("handler", d.Handler)
	o.str("kind", d.Kind)
	o.key("event")
	o.b = d.Event.AppendJSON(o.b)
	o.str("claim_id", d.ClaimID)
	o.int("attempt", d.Attempt)
	o.int("failures", d.Failures)
	o.int("timeout_ms", d.TimeoutMs)
	o.time("lease_until", d.LeaseUntil)
	o.str("idempotency_key", d.IdempotencyKey)
	o.strOmit("correlation", d.Correlation)
	o.rawOmit("state", d.State)
	o.strOmit("last_error", d.LastError)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (d Delivery) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ReactionClaimResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.time("now", r.Now)
	o.key("deliveries")
	o.b = appendArray(o.b, r.Deliveries)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ReactionClaimResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r SettleResult) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("handler", r.Handler)
	o.int("seq", r.Seq)
	o.strOmit("state", r.State)
	if r.Duplicate {
		o.bool("duplicate", true)
	}
	o.intOmit("events", int64(r.Events))
	if r.Error != nil {
		o.key("error")
		o.b = r.Error.AppendJSON(o.b)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r SettleResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r SettleResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("results")
	o.b = appendArray(o.b, r.Results)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r SettleResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends e as JSON.
func (e InboxEntry) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.int("seq", e.Seq)
	o.str("state", e.State)
	o.int("attempt", e.Attempt)
	o.int("failures", e.Failures)
	o.strOmit("worker", e.Worker)
	o.timeOmit("lease_until", e.LeaseUntil)
	o.timeOmit("run_at", e.RunAt)
	o.strOmit("error", e.Error)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (e InboxEntry) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends s as JSON.
func (s ReactionStatus) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("name", s.Name)
	o.str("kind", s.Kind)
	o.strings("types", s.Types)
	o.int("timeout_ms", s.TimeoutMs)
	o.int("checkpoint", s.Checkpoint)
	o.int("lag", s.Lag)
	o.key("open")
	o.b = appendArray(o.b, s.Open)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (s ReactionStatus) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ReactionsResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.int("head", r.Head)
	o.key("reactions")
	o.b = appendArray(o.b, r.Reactions)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ReactionsResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends d as JSON.
func (d DeadlineFired) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("process", d.Process)
	o.str("correlation", d.Correlation)
	o.str("name", d.Name)
	o.time("at", d.At)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (d DeadlineFired) MarshalJSON() ([]byte, error) { return d.AppendJSON(nil), nil }

// AppendJSON appends s as JSON.
func (s ProjectionStatus) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.str("name", s.Name)
	o.strings("types", s.Types)
	o.int("head", s.Head)
	if s.Live != nil {
		o.key("live")
		o.b = s.Live.AppendJSON(o.b)
	}
	if s.Rebuild != nil {
		o.key("rebuild")
		o.b = s.Rebuild.AppendJSON(o.b)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (s ProjectionStatus) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil), nil }

// AppendJSON appends g as JSON.
func (g GenerationStatus) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.int("generation", g.Generation)
	o.int("checkpoint", g.Checkpoint)
	o.int("lag", g.Lag)
	o.str("status", g.Status)
	o.intOmit("failures", g.Failures)
	o.strOmit("error", g.Error)
	o.intOmit("error_seq", g.ErrorSeq)
	o.timeOmit("retry_at", g.RetryAt)
	if g.Outdated {
		o.bool("outdated", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (g GenerationStatus) MarshalJSON() ([]byte, error) { return g.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r ProjectionsResponse) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("projections")
	o.b = appendArray(o.b, r.Projections)
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r ProjectionsResponse) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendJSON appends r as JSON.
func (r QueryResult) AppendJSON(b []byte) []byte {
	o := startObject(b)
	o.key("rows")
	o.b = append(o.b, '[')
	for i, row := range r.Rows {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = append(o.b, row...)
	}
	o.b = append(o.b, ']')
	if r.Truncated {
		o.bool("truncated", true)
	}
	return o.end()
}

// MarshalJSON implements json.Marshaler.
func (r QueryResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil), nil }

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) []byte { return appendString(b, s) }
