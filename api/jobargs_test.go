package api_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
)

type sendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject,omitempty"`
}

func (sendEmail) Kind() string { return "email.send" }

// unencodable has a field encoding/json refuses.
type unencodable struct{ C chan int }

func (unencodable) Kind() string { return "bad.args" }

func TestEnqueueOfNamesTheKindAndKeepsTheOptions(t *testing.T) {
	t.Parallel()
	prio := 3
	r, err := api.EnqueueOf(sendEmail{To: "ada@example.com"}, api.EnqueueRequest{Queue: "mail", Priority: &prio, Tags: []string{"t"}})
	require.NoError(t, err)
	require.Equal(t, "email.send", r.Kind)
	require.JSONEq(t, `{"to":"ada@example.com"}`, string(r.Args))
	require.Equal(t, "mail", r.Queue)
	require.Equal(t, &prio, r.Priority)
	require.Equal(t, []string{"t"}, r.Tags)

	_, err = api.EnqueueOf(sendEmail{}, api.EnqueueRequest{Kind: "other"})
	require.EqualError(t, err, `enqueue email.send: the options name kind "other" and 0 bytes of args; the api_test.sendEmail value is both`)
	_, err = api.EnqueueOf(sendEmail{}, api.EnqueueRequest{Args: json.RawMessage(`{}`)})
	require.ErrorContains(t, err, "2 bytes of args")
	_, err = api.EnqueueOf(nil, api.EnqueueRequest{})
	require.EqualError(t, err, "enqueue: no job args (a nil JobArgs)")
	_, err = api.EnqueueOf(unencodable{}, api.EnqueueRequest{})
	require.ErrorContains(t, err, "enqueue bad.args: encode the api_test.unencodable args: json: unsupported type: chan int")
}

func TestDecodeArgsReadsAsEncodingJSONAndNamesTheKind(t *testing.T) {
	t.Parallel()
	for _, empty := range []string{``, ` `, `null`, `{}`} {
		v, err := api.DecodeArgs[sendEmail](json.RawMessage(empty))
		require.NoError(t, err, empty)
		require.Equal(t, sendEmail{}, v, "absent args are the zero value: %q", empty)
	}
	v, err := api.DecodeArgs[sendEmail](json.RawMessage(`{"to":"a@b.c","cc":"a newer field"}`))
	require.NoError(t, err)
	require.Equal(t, sendEmail{To: "a@b.c"}, v, "fields the type lacks are ignored")
	_, err = api.DecodeArgs[sendEmail](json.RawMessage(`{"to":7}`))
	require.EqualError(t, err, "args of job kind email.send do not decode into api_test.sendEmail: json: cannot unmarshal number into Go struct field sendEmail.to of type string")
}
