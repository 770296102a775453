package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
)

func TestHeaderJSONIsASCIIAndEqual(t *testing.T) {
	in := []byte("{\n  \"name\": \"Zoë 🚀 \\\" x\",\t\"n\": [1, 2]\r\n}")
	out := headerJSON(in)
	require.NoError(t, do.CheckHeader(do.Header{Name: do.HeaderChanges, Value: string(out)}))
	var a, b any
	require.NoError(t, json.Unmarshal(in, &a))
	require.NoError(t, json.Unmarshal(out, &b))
	require.Equal(t, a, b)
	require.Equal(t, `{"name":"Zo\u00eb \ud83d\ude80 \" x","n":[1,2]}`, string(out))

	// DEL is a JSON string's byte, not a header's.
	del := headerJSON([]byte("{\"m\":\"a\x7fb\"}"))
	require.NoError(t, do.CheckHeader(do.Header{Name: do.HeaderChanges, Value: string(del)}))
	require.Equal(t, `{"m":"a\u007fb"}`, string(del))
}

func TestFitChangeStaysInAHeader(t *testing.T) {
	big := json.RawMessage(`"` + strings.Repeat("x", 2000) + `"`)
	c := api.Change{Jobs: []api.JobChange{{ID: "1", Kind: "k", State: "running", Attempt: 1, Progress: big},
		{ID: "2", Kind: "k", State: "running", Attempt: 1, Progress: json.RawMessage(`{"a":1}`)}}}
	h, ok := fitChange(c)
	require.True(t, ok)
	require.NoError(t, do.CheckHeader(h))
	got, err := api.DecodeChange([]byte(h.Value))
	require.NoError(t, err)
	require.Len(t, got.Jobs, 2)
	require.True(t, got.Jobs[0].ProgressOmitted, "the large progress is left out, and says so")
	require.JSONEq(t, `{"a":1}`, string(got.Jobs[1].Progress), "a small one is kept")
	require.False(t, got.More)

	many := api.Change{}
	for i := range 200 {
		many.Jobs = append(many.Jobs, api.JobChange{ID: fmtID(int64(i + 1)), Kind: "kind", State: "available"})
	}
	h, _ = fitChange(many)
	require.NoError(t, do.CheckHeader(h))
	got, err = api.DecodeChange([]byte(h.Value))
	require.NoError(t, err)
	require.True(t, got.More, "jobs past the header's size are left out, and the change says more")
	require.Less(t, len(got.Jobs), 200)
	require.Equal(t, "1", got.Jobs[0].ID)
}
