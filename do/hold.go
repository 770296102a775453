package do

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// Hold describes work a held claim waits for (the stile-hold header) or
// work a commit made ready (stile-woke), so that a transport wakes only
// the held claims that the new work can satisfy: an enqueue costs the
// same however many claims wait for other queues.
//
// A held job claim names its queues ("*": every queue) and its kinds
// (none: every kind); a held delivery claim has Reactions. A wake names
// the queues and kinds that got ready jobs (no kinds: every kind of those
// queues), and Reactions when deliveries may be claimable. The names are
// queue and kind names (api.ValidName), which JSON carries unescaped.
type Hold struct {
	Queues    []string `json:"queues,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
	Reactions bool     `json:"reactions,omitempty"`
}

// AppendJSON appends h as JSON, as encoding/json and JSON.parse read it.
func (h Hold) AppendJSON(b []byte) []byte {
	b = append(b, '{')
	list := func(name string, xs []string) {
		if len(xs) == 0 {
			return
		}
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":[`...)
		for i, x := range xs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, x)
		}
		b = append(b, ']')
	}
	list("queues", h.Queues)
	list("kinds", h.Kinds)
	if h.Reactions {
		if b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		b = append(b, `"reactions":true`...)
	}
	return append(b, '}')
}

// ParseHold reads a stile-hold or stile-woke header; ok is false for an
// absent or unreadable one (which matches everything).
func ParseHold(v string) (h Hold, ok bool) {
	if v == "" || json.Unmarshal([]byte(v), &h) != nil {
		return Hold{}, false
	}
	return h, true
}

// Matches says whether work w made ready may satisfy the claim held as h.
func (h Hold) Matches(w Hold) bool {
	if h.Reactions && w.Reactions {
		return true
	}
	if len(h.Queues) == 0 || len(w.Queues) == 0 {
		return false
	}
	if !slices.Contains(h.Queues, "*") && !slices.ContainsFunc(h.Queues, func(q string) bool { return slices.Contains(w.Queues, q) }) {
		return false
	}
	return len(h.Kinds) == 0 || len(w.Kinds) == 0 ||
		slices.ContainsFunc(h.Kinds, func(k string) bool { return slices.Contains(w.Kinds, k) })
}

// HeldCounts is the stile-held header: the claims held for the tenant and
// for the request's token.
func HeldCounts(tenant, token int) string {
	return strconv.Itoa(tenant) + "," + strconv.Itoa(token)
}

// ParseHeldCounts reads a stile-held header; absent or unreadable is none.
func ParseHeldCounts(v string) (tenant, token int) {
	a, b, ok := strings.Cut(v, ",")
	if !ok {
		return 0, 0
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, 0
	}
	return x, y
}
