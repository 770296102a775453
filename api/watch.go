package api

import (
	"encoding/json"
	"strings"
)

// Live updates: GET /v1/t/{tenant}/watch, upgraded to a WebSocket, sends a
// Change for each request of the tenant whose transaction committed
// changes (docs/API.md, "Watch").

// WatchFilter is what a watch follows: one job, the jobs of one kind, or
// (both empty) everything. The module answers a watch request with it
// (its query, checked), and the host filters each Change by it.
//
//stile:json DecodeWatchFilter answer
type WatchFilter struct {
	Job  string `json:"job,omitempty"`
	Kind string `json:"kind,omitempty"`
}

// Change is one message of a watch: what one committed request changed,
// in the order it changed it. It is a notice of committed state, not a
// log: a watcher that must not miss a state reads the job (GET) after it
// subscribed, and again on More.
//
//stile:json DecodeChange answer
type Change struct {
	// Jobs changed: each with its state, attempt and progress after the
	// request (a job listed twice is listed once, as it ended).
	Jobs []JobChange `json:"jobs,omitempty"`
	// Reactions are the reaction handlers whose deliveries changed (new
	// events to deliver, a claim, a settlement, a skip).
	Reactions []string `json:"reactions,omitempty"`
	// Projections are the projections that applied events.
	Projections []string `json:"projections,omitempty"`
	// More says the request changed more than the message lists: read
	// what the watcher follows again.
	More bool `json:"more,omitempty"`
}

// JobChange is one job as a request left it. State is the job's state,
// or JobDeleted.
type JobChange struct {
	ID      string   `json:"id"`
	Kind    string   `json:"kind"`
	State   JobState `json:"state"`
	Attempt int64    `json:"attempt"`
	// Progress is the handler's progress, when this request published
	// it; ProgressOmitted says it did but it is too large for a change
	// message (GET the job).
	Progress        json.RawMessage `json:"progress,omitempty"`
	ProgressOmitted bool            `json:"progress_omitted,omitempty"`
}

// JobDeleted is a JobChange's state for a job that was deleted.
const JobDeleted = "deleted"

// The WebSocket subprotocols of a watch. A browser cannot set an
// Authorization header on a WebSocket, so it offers the token as a second
// subprotocol, WatchTokenPrefix + token; the host answers WatchProtocol,
// never the token's.
const (
	WatchProtocol    = "stile"
	WatchTokenPrefix = "bearer."
)

// WatchAuthorization is the Authorization value a watch's
// Sec-WebSocket-Protocol values carry (a token offered as
// WatchTokenPrefix+token), or "" when they carry none.
func WatchAuthorization(protocols []string) string {
	for _, v := range protocols {
		for p := range strings.SplitSeq(v, ",") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(p), WatchTokenPrefix); ok && t != "" {
				return "Bearer " + t
			}
		}
	}
	return ""
}

// For is the part of c a watch with filter f receives, and whether it
// receives any. A filtered watch receives only its jobs' changes, and More
// (it cannot know whether what was left out concerned it).
func (c Change) For(f WatchFilter) (Change, bool) {
	if f.Job == "" && f.Kind == "" {
		return c, len(c.Jobs) > 0 || len(c.Reactions) > 0 || len(c.Projections) > 0 || c.More
	}
	out := Change{More: c.More}
	for _, j := range c.Jobs {
		if (f.Job == "" || j.ID == f.Job) && (f.Kind == "" || j.Kind == f.Kind) {
			out.Jobs = append(out.Jobs, j)
		}
	}
	return out, len(out.Jobs) > 0 || out.More
}
