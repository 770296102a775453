package api_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

func TestNoteOfFailingFitsAHeader(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_000).UTC()
	var f api.FailingResponse
	for i := range 40 {
		f.Jobs = append(f.Jobs, api.FailingJobs{Kind: "kind." + strconv.Itoa(i), State: "dead", Error: strings.Repeat("é\"", 100) + strconv.Itoa(i),
			Count: int64(100 - i), FirstAt: at, LastAt: at.Add(time.Minute), LatestJob: strconv.Itoa(i)})
	}
	f.Reactions = []api.FailingReaction{{Name: "refund", Failing: 1000, Seq: 7, Error: "card declined"}}
	f.Projections = []api.FailingProjection{{Name: "orders", ErrorSeq: 9, Error: "bad row"}}
	n := api.NoteOfFailing("acme", f)
	b := n.AppendJSON(nil)
	require.LessOrEqual(t, len(b), api.MaxFailingNote)
	for _, c := range b {
		require.True(t, c >= 0x20 && c <= 0x7e, "a header carries printable ASCII only: %q", b)
	}
	require.Equal(t, "reaction", n.Groups[0].What, "the most failing first")
	require.Equal(t, int64(1000), n.Groups[0].Count)
	require.Equal(t, "kind.0", n.Groups[1].Name)
	require.Equal(t, at.UnixMilli(), n.Groups[1].First)
	require.LessOrEqual(t, len(n.Groups[1].Error), api.MaxFailingNoteError)
	total := int64(1000 + 1)
	for i := range 40 {
		total += int64(100 - i)
	}
	sum := n.More
	for _, g := range n.Groups {
		sum += g.Count
	}
	require.Equal(t, total, sum, "what did not fit is counted in More")
	require.Positive(t, n.More)
	back, err := api.DecodeFailingNote(b)
	require.NoError(t, err)
	require.Equal(t, n, back)

	empty := api.NoteOfFailing("acme", api.FailingResponse{})
	require.Equal(t, `{"tenant":"acme","groups":[]}`, string(empty.AppendJSON(nil)))
}

func TestFleetFailingSumsTenants(t *testing.T) {
	g := func(name string, count, first, last int64, latest string) api.FailingGroup {
		return api.FailingGroup{What: "job", Name: name, State: "dead", Error: "timeout #", Count: count, First: first, Last: last, Latest: latest}
	}
	f := api.FleetFailing([]api.FailingNote{
		{Tenant: "a", Groups: []api.FailingGroup{g("email", 2, 5000, 9000, "3"), {What: "reaction", Name: "refund", Error: "x", Count: 1, Latest: "4"}}},
		{Tenant: "b", Groups: []api.FailingGroup{g("email", 5, 1000, 6000, "8")}, More: 3},
		{Tenant: "c", Groups: []api.FailingGroup{}},
	})
	require.Equal(t, int64(2), f.Tenants, "a tenant with nothing failing is not counted")
	require.Equal(t, []string{"b"}, f.Partial)
	require.Len(t, f.Groups, 2)
	e := f.Groups[0]
	require.Equal(t, "email", e.Name)
	require.Equal(t, int64(7), e.Count)
	require.Equal(t, int64(2), e.TenantCount)
	require.Equal(t, time.UnixMilli(1000).UTC(), *e.FirstAt)
	require.Equal(t, time.UnixMilli(9000).UTC(), *e.LastAt)
	require.Equal(t, "b", e.Tenants[0].Tenant, "the tenant with the most first")
	require.Equal(t, "8", e.Tenants[0].Latest)
	require.Equal(t, "refund", f.Groups[1].Name)
	require.Nil(t, f.Groups[1].FirstAt, "a reaction's times are not kept")
}

func TestParseFailingQuery(t *testing.T) {
	p, e := api.ParseFailingQuery(map[string][]string{"prefix": {"acme-"}})
	require.Nil(t, e)
	require.Equal(t, "acme-", p)
	_, e = api.ParseFailingQuery(map[string][]string{"tenant": {"x"}})
	require.NotNil(t, e)
	require.Contains(t, e.Message, "unknown parameter")
	_, e = api.ParseFailingQuery(map[string][]string{"prefix": {"a", "b"}})
	require.NotNil(t, e)
}
