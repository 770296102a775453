package runtime

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueryDecodesAsNetURL(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "state=running", "kind=email.welcome&queue=a%20b&limit=10",
		"queue=a+b", "kind=%C3%A9%2B", "after=", "flag", "&&state=dead&", "k%3D=v%26"} {
		got, e := query(raw)
		require.Nil(t, e, "%q", raw)
		want, err := url.ParseQuery(raw)
		require.NoError(t, err)
		require.Len(t, got, len(want), "%q", raw)
		for k, v := range want {
			require.Equal(t, v[0], got[k], "%q: key %q", raw, k)
		}
	}
}

func TestQueryRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for raw, msg := range map[string]string{
		"state=%zz":       "bad percent-encoding",
		"state=%4":        "bad percent-encoding",
		"state=a&state=b": `"state" is given twice`,
		"kind=a&%6Bind=b": `"kind" is given twice`,
		"queue=%":         "bad percent-encoding",
	} {
		_, e := query(raw)
		require.NotNil(t, e, "%q", raw)
		require.Equal(t, 400, e.Status)
		require.Contains(t, e.Message, msg, "%q", raw)
	}
}
