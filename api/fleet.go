package api

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// What is failing across the fleet: each tenant tells the directory what
// is failing in it (a FailingNote, the stile-failing header of the module,
// when it changed and at most every FailingNoteEvery), as it tells it of
// readiness; the directory answers GET FailingPath from those notes,
// without opening any tenant.

// FailingPath is the directory's view of what is failing in every tenant
// (GET; ?prefix= keeps the tenants whose names start with it).
const FailingPath = "/" + Version + "/failing"

// FailingNoteEvery is how often at most a tenant tells the directory what
// is failing in it, and FailingNoteDelay how long after the change that
// made it look it does (changes in a burst make one note).
const (
	FailingNoteEvery = 30 * time.Second
	FailingNoteDelay = 2 * time.Second
)

// MaxFailingNote bounds a FailingNote's encoding: it travels as a header
// of the module's response (the frame's bound on a header's value). The
// groups a tenant has the most failing of go first; More counts the
// failing jobs, deliveries and projections of the groups left out.
const MaxFailingNote = 1024

// MaxFailingNoteError bounds an error's shape in a FailingNote.
const MaxFailingNoteError = 80

// FailingNote is what is failing in one tenant, as it tells the
// directory: its groups (FailingGroup), most failing first, and More
// failing things in groups that did not fit. No groups: nothing fails.
//
//stile:json DecodeFailingNote
type FailingNote struct {
	Tenant string         `json:"tenant"`
	Groups []FailingGroup `json:"groups"`
	More   int64          `json:"more,omitempty"`
}

// FailingGroup is one group of a FailingNote: What is "job" (Name its
// kind, State retryable or dead), "reaction" (Name its handler) or
// "projection"; Error the shape of their error (numbers made #); Count
// how many; First and Last when the oldest and newest of them failed
// (Unix ms; 0 when the tenant does not keep it); Latest the newest job's
// id, or the event sequence number a reaction or projection is stuck on.
type FailingGroup struct {
	What   string `json:"what"`
	Name   string `json:"name"`
	State  string `json:"state,omitempty"`
	Error  string `json:"error"`
	Count  int64  `json:"count"`
	First  int64  `json:"first,omitempty"`
	Last   int64  `json:"last,omitempty"`
	Latest string `json:"latest,omitempty"`
}

// FleetFailingResponse is what is failing across the tenants (GET
// FailingPath): groups of the same thing failing the same way, summed over
// the tenants, most failing first. Tenants counts the tenants with
// anything failing; Partial names those whose notes left groups out (their
// own GET /failing has all of them).
type FleetFailingResponse struct {
	Groups  []FleetFailingGroup `json:"groups"`
	Tenants int64               `json:"tenants"`
	Partial []string            `json:"partial,omitempty"`
}

// FleetFailingGroup is a FailingGroup summed over tenants: FirstAt and
// LastAt the earliest and latest any tenant said, TenantCount how many
// tenants have it, Tenants the MaxFleetGroupTenants of them with the most.
type FleetFailingGroup struct {
	What        string          `json:"what"`
	Name        string          `json:"name"`
	State       string          `json:"state,omitempty"`
	Error       string          `json:"error"`
	Count       int64           `json:"count"`
	FirstAt     *time.Time      `json:"first_at,omitempty"`
	LastAt      *time.Time      `json:"last_at,omitempty"`
	TenantCount int64           `json:"tenant_count"`
	Tenants     []FailingTenant `json:"tenants"`
}

// FailingTenant is one tenant of a FleetFailingGroup: how many of the
// group it has, and its newest (a job id, or an event's sequence number).
type FailingTenant struct {
	Tenant string     `json:"tenant"`
	Count  int64      `json:"count"`
	Latest string     `json:"latest,omitempty"`
	LastAt *time.Time `json:"last_at,omitempty"`
}

// MaxFleetGroupTenants bounds the tenants a FleetFailingGroup names, and
// MaxFleetGroups the groups of a FleetFailingResponse.
const (
	MaxFleetGroupTenants = 20
	MaxFleetGroups       = 200
)

// ParseFailingQuery reads GET FailingPath's query: ?prefix= only.
func ParseFailingQuery(q map[string][]string) (prefix string, e *Error) {
	for k, v := range q {
		if k != "prefix" {
			return "", Refuse(CodeInvalidRequest, "unknown parameter %q: use prefix", k)
		}
		if len(v) > 1 {
			return "", Refuse(CodeInvalidRequest, "query parameter %q is given twice", k)
		}
		prefix = v[0]
	}
	return prefix, nil
}

// FleetFailing sums the notes of the tenants (each note's Tenant names
// it) into the fleet's view: groups with the same What, Name, State and
// Error are one. The directory of every host answers with it (the
// Worker's in JavaScript, checked against it by the tests).
func FleetFailing(notes []FailingNote) FleetFailingResponse {
	type key struct{ what, name, state, err string }
	at := map[key]int{}
	resp := FleetFailingResponse{Groups: []FleetFailingGroup{}}
	var first, last []int64 // per group: earliest first, latest last (ms)
	for _, n := range notes {
		if len(n.Groups) == 0 && n.More == 0 {
			continue
		}
		resp.Tenants++
		if n.More > 0 {
			resp.Partial = append(resp.Partial, n.Tenant)
		}
		for _, g := range n.Groups {
			k := key{g.What, g.Name, g.State, g.Error}
			i, ok := at[k]
			if !ok {
				i = len(resp.Groups)
				at[k] = i
				resp.Groups = append(resp.Groups, FleetFailingGroup{What: g.What, Name: g.Name, State: g.State, Error: g.Error, Tenants: []FailingTenant{}})
				first, last = append(first, 0), append(last, 0)
			}
			f := &resp.Groups[i]
			f.Count += g.Count
			f.TenantCount++
			if g.First != 0 && (first[i] == 0 || g.First < first[i]) {
				first[i] = g.First
			}
			last[i] = max(last[i], g.Last)
			f.Tenants = append(f.Tenants, FailingTenant{Tenant: n.Tenant, Count: g.Count, Latest: g.Latest, LastAt: msTime(g.Last)})
		}
	}
	for i := range resp.Groups {
		g := &resp.Groups[i]
		g.FirstAt, g.LastAt = msTime(first[i]), msTime(last[i])
		slices.SortStableFunc(g.Tenants, func(a, b FailingTenant) int {
			if a.Count != b.Count {
				return int(b.Count - a.Count)
			}
			return strings.Compare(a.Tenant, b.Tenant)
		})
		if len(g.Tenants) > MaxFleetGroupTenants {
			g.Tenants = g.Tenants[:MaxFleetGroupTenants]
		}
	}
	slices.SortStableFunc(resp.Groups, func(a, b FleetFailingGroup) int {
		if a.Count != b.Count {
			return int(b.Count - a.Count)
		}
		return strings.Compare(a.What+" "+a.Name+" "+a.State+" "+a.Error, b.What+" "+b.Name+" "+b.State+" "+b.Error)
	})
	if len(resp.Groups) > MaxFleetGroups {
		resp.Groups = resp.Groups[:MaxFleetGroups]
	}
	slices.Sort(resp.Partial)
	return resp
}

func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// NoteOfFailing is what a tenant tells the directory of what GET /failing
// says (f, read at the tenant): one group per job group, failing reaction
// and stalled projection, most failing first, as many as fit in
// MaxFailingNote bytes (More counts the rest). Errors are cut to
// MaxFailingNoteError bytes of printable ASCII, as a header carries them.
func NoteOfFailing(tenant string, f FailingResponse) FailingNote {
	var gs []FailingGroup
	for _, j := range f.Jobs {
		gs = append(gs, FailingGroup{What: "job", Name: j.Kind, State: j.State, Error: headerSafe(j.Error), Count: j.Count,
			First: j.FirstAt.UnixMilli(), Last: j.LastAt.UnixMilli(), Latest: j.LatestJob})
	}
	for _, r := range f.Reactions {
		gs = append(gs, FailingGroup{What: "reaction", Name: r.Name, Error: headerSafe(r.Error), Count: r.Failing, Latest: strconv.FormatInt(r.Seq, 10)})
	}
	for _, p := range f.Projections {
		gs = append(gs, FailingGroup{What: "projection", Name: p.Name, Error: headerSafe(p.Error), Count: 1, Latest: strconv.FormatInt(p.ErrorSeq, 10)})
	}
	slices.SortStableFunc(gs, func(a, b FailingGroup) int { return int(b.Count - a.Count) })
	n := FailingNote{Tenant: tenant, Groups: []FailingGroup{}}
	for i, g := range gs {
		n.Groups = append(n.Groups, g)
		if len(n.AppendJSON(nil)) > MaxFailingNote {
			n.Groups = n.Groups[:len(n.Groups)-1]
			for _, rest := range gs[i:] {
				n.More += rest.Count
			}
			// More's own digits may not fit either: one group fewer.
			for len(n.AppendJSON(nil)) > MaxFailingNote && len(n.Groups) > 0 {
				n.More += n.Groups[len(n.Groups)-1].Count
				n.Groups = n.Groups[:len(n.Groups)-1]
			}
			break
		}
	}
	return n
}

// headerSafe is s as printable ASCII (other bytes made ?), cut to
// MaxFailingNoteError bytes.
func headerSafe(s string) string {
	var b strings.Builder
	for _, c := range s {
		if b.Len() >= MaxFailingNoteError {
			break
		}
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '?'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Operations across tenants: a bulk operation (OperationRequest) given to
// every tenant whose name starts with a prefix, through the directory. The
// directory gives it to FleetOperationSlice tenants at a time, in name
// order, each one POST /operations of that tenant (which runs it in its
// own slices, each one transaction); reading the operation (GET
// FleetOperationsPath/{id}) reads the progress of the tenants' operations
// not known to be done yet, FleetProgressReads at a time.

// FleetOperationsPath starts (POST) and lists (GET) operations across
// tenants; FleetOperationsPath/{id} reads one.
const FleetOperationsPath = "/" + Version + "/operations"

// FleetOperationSlice bounds the tenants given an operation in one step,
// FleetProgressReads the tenants' progress one read of it asks for, and
// MaxFleetOperations the operations a directory keeps (the oldest done
// ones go first).
const (
	FleetOperationSlice = 25
	FleetProgressReads  = 50
	MaxFleetOperations  = 100
)

// FleetOperationRequest starts an operation across tenants: Action and
// Filter as in OperationRequest, in the tenants whose names start with
// Prefix ("": every tenant the token covers).
//
//stile:json DecodeFleetOperation
type FleetOperationRequest struct {
	Action string `json:"action"`
	Filter string `json:"filter"`
	Prefix string `json:"prefix"`
}

// FleetOperation is an operation across tenants and its progress: State
// "running" until every tenant of the prefix was given it and every
// tenant's operation is done, then "done". Tenants counts the tenants
// given it so far; Matched, Done and Skipped sum their operations'
// figures as last read; Refused counts tenants that refused it (their
// Operations entry says why). Operations lists each tenant's operation
// (read one operation to have it).
type FleetOperation struct {
	ID         string            `json:"id"`
	Action     string            `json:"action"`
	Filter     string            `json:"filter"`
	Prefix     string            `json:"prefix"`
	State      string            `json:"state"`
	Tenants    int64             `json:"tenants"`
	Matched    int64             `json:"matched"`
	Done       int64             `json:"done"`
	Skipped    int64             `json:"skipped"`
	Refused    int64             `json:"refused"`
	CreatedAt  time.Time         `json:"created_at"`
	DoneAt     *time.Time        `json:"done_at,omitempty"`
	Operations []TenantOperation `json:"operations,omitempty"`
}

// TenantOperation is one tenant's part of a FleetOperation: its
// operation's id and figures as last read, or the tenant's refusal
// (State "refused", Error why).
type TenantOperation struct {
	Tenant  string `json:"tenant"`
	ID      string `json:"id,omitempty"`
	State   string `json:"state"`
	Matched int64  `json:"matched"`
	Done    int64  `json:"done"`
	Skipped int64  `json:"skipped"`
	Error   string `json:"error,omitempty"`
}

// FleetOperationsResponse lists the newest operations across tenants.
type FleetOperationsResponse struct {
	Operations []FleetOperation `json:"operations"`
}

// CheckFleetOperation refuses an operation across tenants whose action is
// not one a tenant takes (its filter is the tenants' to judge: the first
// tenant's refusal refuses the whole operation).
func CheckFleetOperation(r FleetOperationRequest) *Error {
	switch r.Action {
	case "retry", "cancel", "delete":
		return nil
	}
	return Refuse(CodeInvalidRequest, "action %q is not retry, cancel or delete", r.Action)
}

// ScopePrefix narrows a prefix of tenants to a token's scope ("*" every
// tenant, "acme-*" a prefix, else one tenant): the prefix asked for when
// it is within the scope, the scope's own prefix when the prefix asked
// for covers more, and a refusal when the two share no tenant or the
// token is for one tenant (what of routes outside any tenant).
func ScopePrefix(scope, prefix, what string) (string, *Error) {
	if scope == "*" {
		return prefix, nil
	}
	p, ok := strings.CutSuffix(scope, "*")
	switch {
	case !ok:
		return "", Refuse(CodeForbidden, "this token is for %s: %s needs a token for a prefix or every tenant", scope, what)
	case strings.HasPrefix(prefix, p):
		return prefix, nil
	case strings.HasPrefix(p, prefix):
		return p, nil
	}
	return "", Refuse(CodeForbidden, "this token is for %s: prefix %q names none of its tenants", scope, prefix)
}
