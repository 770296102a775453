package api_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

// watchCase is a change, a watch's filter, and what the watch receives
// (nil: nothing); testdata/watch.json holds them for the Worker's
// changeFor (host/workerd/js/abi.mjs) to agree with.
type watchCase struct {
	Change api.Change      `json:"change"`
	Filter api.WatchFilter `json:"filter"`
	Want   *api.Change     `json:"want"`
}

func watchCases() []watchCase {
	j7 := api.JobChange{ID: "7", Kind: "email", State: "running", Attempt: 1, Progress: json.RawMessage(`{"done":1}`)}
	j8 := api.JobChange{ID: "8", Kind: "sms", State: "completed", Attempt: 2}
	both := api.Change{Jobs: []api.JobChange{j7, j8}, Reactions: []string{"audit"}, Projections: []string{"totals"}}
	return []watchCase{
		{both, api.WatchFilter{}, &both},
		{both, api.WatchFilter{Job: "7"}, &api.Change{Jobs: []api.JobChange{j7}}},
		{both, api.WatchFilter{Kind: "sms"}, &api.Change{Jobs: []api.JobChange{j8}}},
		{both, api.WatchFilter{Job: "7", Kind: "sms"}, nil},
		{both, api.WatchFilter{Job: "9"}, nil},
		{api.Change{Reactions: []string{"audit"}}, api.WatchFilter{Job: "7"}, nil},
		{api.Change{Reactions: []string{"audit"}}, api.WatchFilter{}, &api.Change{Reactions: []string{"audit"}}},
		{api.Change{More: true}, api.WatchFilter{Kind: "email"}, &api.Change{More: true}},
		{api.Change{Jobs: []api.JobChange{j8}, More: true}, api.WatchFilter{Job: "7"}, &api.Change{More: true}},
		{api.Change{}, api.WatchFilter{}, nil},
	}
}

// TestChangeFor: what a watch receives of a change, by its filter.
// STILE_UPDATE=1 rewrites testdata/watch.json.
func TestChangeFor(t *testing.T) {
	for _, c := range watchCases() {
		got, ok := c.Change.For(c.Filter)
		if c.Want == nil {
			require.False(t, ok, "%+v for %+v", c.Change, c.Filter)
			continue
		}
		require.True(t, ok, "%+v for %+v", c.Change, c.Filter)
		require.Equal(t, string(c.Want.AppendJSON(nil)), string(got.AppendJSON(nil)))
	}
	b, err := json.MarshalIndent(watchCases(), "", "  ")
	require.NoError(t, err)
	b = append(b, '\n')
	const path = "testdata/watch.json"
	if os.Getenv("STILE_UPDATE") == "1" {
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "STILE_UPDATE=1 go test ./api -run TestChangeFor")
	require.Equal(t, string(want), string(b), "testdata/watch.json is stale: STILE_UPDATE=1 go test ./api -run TestChangeFor")
}
