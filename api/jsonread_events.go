package api

// Decoders of the event and reaction requests; see jsonread.go.

// DecodeAppend decodes the body of POST /streams/{stream}.
func DecodeAppend(b []byte) (AppendRequest, error) {
	var a AppendRequest
	err := decodeBody(b, func(r *reader) error {
		return decodeObject(r, func(key string) error {
			var err error
			switch key {
			case "expected_version":
				if r.null() {
					a.ExpectedVersion = nil
					return nil
				}
				var n int64
				n, err = r.integer(key)
				a.ExpectedVersion = &n
			case "events":
				err = objectArray(r, key, func() { a.Events = []NewEvent{} }, func() error {
					var v NewEvent
					err := v.decode(r)
					a.Events = append(a.Events, v)
					return err
				})
			default:
				return unknownField(key)
			}
			return err
		})
	})
	return a, err
}

// Not inlined: each call site would carry its own copy of the closure.
//
//go:noinline
func (e *NewEvent) decode(r *reader) error {
	return decodeObject(r, func(key string) error {
		var err error
		switch key {
		case "type":
			e.Type, err = r.stringField(key)
		case "data":
			e.Data, err = r.raw()
		default:
			return unknownField(key)
		}
		return err
	})
}

// DecodeCommand decodes the body of POST /commands.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	err := decodeBody(b, func(r *reader) error { return c.decode(r) })
	return c, err
}

// Not inlined: each call site would carry its own copy of the closure.
//
//go:noinline
func (c *Command) decode(r *reader) error {
	return decodeObject(r, func(key string) error {
		var err error
		switch key {
		case "id":
			c.ID, err = r.stringField(key)
		case "aggregate":
			c.Aggregate, err = r.stringField(key)
		case "aggregate_id":
			c.AggregateID, err = r.stringField(key)
		case "type":
			c.Type, err = r.stringField(key)
		case "data":
			c.Data, err = r.raw()
		default:
			return unknownField(key)
		}
		return err
	})
}

// DecodeReactionClaim decodes the body of POST /reactions/claims.
func DecodeReactionClaim(b []byte) (ReactionClaimRequest, error) {
	var c ReactionClaimRequest
	err := decodeBody(b, func(r *reader) error {
		return decodeObject(r, func(key string) error {
			var err error
			switch key {
			case "worker":
				c.Worker, err = r.stringField(key)
			case "handlers":
				c.Handlers, err = stringArray(r, key)
			case "limit":
				var n int64
				n, err = r.integer(key)
				c.Limit = int(n)
			case "wait_ms":
				c.WaitMs, err = r.integer(key)
			default:
				return unknownField(key)
			}
			return err
		})
	})
	return c, err
}

// DecodeSettle decodes the body of POST /reactions/settle.
func DecodeSettle(b []byte) (SettleRequest, error) {
	var p SettleRequest
	err := decodeBody(b, func(r *reader) error {
		return decodeObject(r, func(key string) error {
			if key != "settlements" {
				return unknownField(key)
			}
			return objectArray(r, key, func() { p.Settlements = []Settlement{} }, func() error {
				var v Settlement
				err := v.decode(r)
				p.Settlements = append(p.Settlements, v)
				return err
			})
		})
	})
	return p, err
}

// Not inlined: each call site would carry its own copy of the closure.
//
//go:noinline
func (s *Settlement) decode(r *reader) error {
	return decodeObject(r, func(key string) error {
		var err error
		switch key {
		case "handler":
			s.Handler, err = r.stringField(key)
		case "seq":
			s.Seq, err = r.integer(key)
		case "claim_id":
			s.ClaimID, err = r.stringField(key)
		case "outcome":
			s.Outcome, err = r.stringField(key)
		case "error":
			s.Error, err = r.stringField(key)
		case "delay_ms":
			s.DelayMs, err = r.integer(key)
		case "commands":
			err = objectArray(r, key, func() { s.Commands = []Command{} }, func() error {
				var v Command
				err := v.decode(r)
				s.Commands = append(s.Commands, v)
				return err
			})
		case "scheduled":
			err = objectArray(r, key, func() { s.Scheduled = []ScheduledCommand{} }, func() error {
				var v ScheduledCommand
				err := v.decode(r)
				s.Scheduled = append(s.Scheduled, v)
				return err
			})
		case "state":
			s.State, err = r.raw()
		case "done":
			s.Done, err = r.boolField(key)
		case "deadlines":
			err = objectArray(r, key, func() { s.Deadlines = []Deadline{} }, func() error {
				var v Deadline
				err := v.decode(r)
				s.Deadlines = append(s.Deadlines, v)
				return err
			})
		case "cancel_deadlines":
			s.CancelDeadlines, err = stringArray(r, key)
		default:
			return unknownField(key)
		}
		return err
	})
}

// Not inlined: each call site would carry its own copy of the closure.
//
//go:noinline
func (sc *ScheduledCommand) decode(r *reader) error {
	return decodeObject(r, func(key string) error {
		var err error
		switch key {
		case "at":
			if r.null() {
				return nil
			}
			sc.At, err = timeField(r, key)
		case "command":
			if r.null() {
				return nil
			}
			if r.kindAt() != "object" {
				return typeError(r, key, "an object")
			}
			err = sc.Command.decode(r)
		default:
			return unknownField(key)
		}
		return err
	})
}

// Not inlined: each call site would carry its own copy of the closure.
//
//go:noinline
func (d *Deadline) decode(r *reader) error {
	return decodeObject(r, func(key string) error {
		var err error
		switch key {
		case "name":
			d.Name, err = r.stringField(key)
		case "at":
			if r.null() {
				return nil
			}
			d.At, err = timeField(r, key)
		default:
			return unknownField(key)
		}
		return err
	})
}

// DecodeSkip decodes the body of POST /reactions/{handler}/skip.
func DecodeSkip(b []byte) (SkipRequest, error) {
	var s SkipRequest
	err := decodeBody(b, func(r *reader) error {
		return decodeObject(r, func(key string) error {
			var err error
			switch key {
			case "seq":
				s.Seq, err = r.integer(key)
			case "reason":
				s.Reason, err = r.stringField(key)
			default:
				return unknownField(key)
			}
			return err
		})
	})
	return s, err
}

// DecodeDeadlineFired decodes the data of a deadline event.
func DecodeDeadlineFired(b []byte) (DeadlineFired, error) {
	var d DeadlineFired
	err := decodeBody(b, func(r *reader) error {
		return decodeObject(r, func(key string) error {
			var err error
			switch key {
			case "process":
				d.Process, err = r.stringField(key)
			case "correlation":
				d.Correlation, err = r.stringField(key)
			case "name":
				d.Name, err = r.stringField(key)
			case "at":
				if r.null() {
					return nil
				}
				d.At, err = timeField(r, key)
			default:
				return unknownField(key)
			}
			return err
		})
	})
	return d, err
}
