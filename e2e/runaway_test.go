package e2e_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/stiletest"
)

// TestRunawayGuestIsStopped: a module stuck in a loop is closed when its
// call's deadline passes (the Durable Object's CPU limit, locally), the
// request fails with nothing written, and the tenant serves the next one.
func TestRunawayGuestIsStopped(t *testing.T) {
	t.Parallel()
	m := stiletest.New(t, stiletest.Config{Package: testTenant, CallTimeout: 300 * time.Millisecond}).Manager()
	enqueue := func(args string) (do.Response, error) {
		body, _ := json.Marshal(api.EnqueueRequest{Kind: "test.spin", Args: json.RawMessage(args)})
		return m.Do(context.Background(), "spin", do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/spin/jobs", Body: body})
	}
	resp, err := enqueue(`{}`)
	require.NoError(t, err)
	require.Equal(t, 201, resp.Status)

	_, err = enqueue(`{"spin":true}`)
	require.ErrorIs(t, err, host.ErrTrapped, "the runaway call was stopped")
	require.Equal(t, int64(1), m.Restarts("spin"))

	resp, err = enqueue(`{}`)
	require.NoError(t, err, "the tenant keeps serving")
	require.Equal(t, 201, resp.Status)
	var j api.Job
	require.NoError(t, json.Unmarshal(resp.Body, &j))
	require.Equal(t, "2", j.ID, "the stopped request wrote nothing")
}
