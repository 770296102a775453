package runtime

import (
	"slices"
	"unicode/utf8"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

// changes is the stile-changes header of a response: what the request's
// committed transactions changed (an api.Change), for the host to send to
// the tenant's watchers; ok false when nothing changed. It is bounded by
// the header's size: jobs past it are left out and the change says More,
// and a progress that does not fit is left out of its job with
// ProgressOmitted.
func (t *Tenant) changes() (do.Header, bool) {
	list, more := t.store.Changes()
	c := api.Change{More: more, Reactions: t.reactions.Changes(), Projections: t.proj.advanced}
	t.proj.advanced = nil
	if !t.store.Watched {
		return do.Header{}, false
	}
	if len(list) == 0 && !more && len(c.Reactions) == 0 && len(c.Projections) == 0 {
		return do.Header{}, false
	}
	// A job changed twice is listed once, as the writes left it, where
	// it first changed (a scan: the store keeps at most 64 changes, and
	// a map costs the module more than scanning so few).
	ids := make([]int64, 0, len(list))
	for _, ch := range list {
		jc := api.JobChange{ID: fmtID(ch.ID), Kind: ch.Kind, State: ch.State, Attempt: ch.Attempt, Progress: ch.Progress}
		if i := slices.Index(ids, ch.ID); i >= 0 {
			if jc.Progress == nil && c.Jobs[i].Attempt == jc.Attempt {
				jc.Progress = c.Jobs[i].Progress // a later write of the attempt keeps what it published
			}
			c.Jobs[i] = jc
			continue
		}
		ids = append(ids, ch.ID)
		c.Jobs = append(c.Jobs, jc)
	}
	return fitChange(c)
}

// maxChangeProgress is the largest progress a change carries; larger is
// left out (ProgressOmitted), so that one job's progress does not crowd
// out the others' changes.
const maxChangeProgress = 512

// fitChange encodes c as a header within do.MaxHeaderValue: progress too
// large for it is left out first, then jobs from the end (More).
func fitChange(c api.Change) (do.Header, bool) {
	for i := range c.Jobs {
		if c.Jobs[i].Progress != nil {
			c.Jobs[i].Progress = headerJSON(c.Jobs[i].Progress)
		}
		if len(c.Jobs[i].Progress) > maxChangeProgress {
			c.Jobs[i].Progress, c.Jobs[i].ProgressOmitted = nil, true
		}
	}
	b := c.AppendJSON(nil)
	for i := len(c.Jobs) - 1; len(b) > do.MaxHeaderValue && i >= 0; i-- {
		if c.Jobs[i].Progress != nil {
			c.Jobs[i].Progress, c.Jobs[i].ProgressOmitted = nil, true
			b = c.AppendJSON(b[:0])
		}
	}
	for len(b) > do.MaxHeaderValue && len(c.Jobs) > 0 {
		c.Jobs, c.More = c.Jobs[:len(c.Jobs)-1], true
		b = c.AppendJSON(b[:0])
	}
	if len(b) > do.MaxHeaderValue {
		b = api.Change{More: true}.AppendJSON(b[:0])
	}
	return do.Header{Name: do.HeaderChanges, Value: string(b)}, true
}

// headerJSON is valid JSON v as a header value may carry it: without the
// whitespace between its tokens (a newline is no header byte), and with
// DEL and every non-ASCII character of its strings escaped (\uXXXX).
func headerJSON(v []byte) []byte {
	out := make([]byte, 0, len(v))
	inString := false
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == 0x7f: // DEL: valid in a JSON string, no header byte
			out = appendU(out, 0x7f)
			i++
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(v[i:])
			if r >= 0x10000 {
				r -= 0x10000
				out = appendU(appendU(out, 0xd800+(r>>10)), 0xdc00+(r&0x3ff))
			} else {
				out = appendU(out, r)
			}
			i += n
			continue
		case inString && c == '\\':
			out = append(out, c, v[i+1])
			i += 2
			continue
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			i++
			continue
		}
		out = append(out, c)
		i++
	}
	return out
}

func appendU(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
