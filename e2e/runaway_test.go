package e2e_test

import (
	"context"
	"encoding/json"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host"
	"github.com/stile-run/stile/host/wazerohost"
	"github.com/stile-run/stile/stiletest"
)

// TestRunawayGuestIsStopped: a module stuck in a loop is stopped when its
// call's deadline passes (the Durable Object's CPU limit, locally), the
// request fails with nothing written, and the tenant serves the next one.
// Garbage collections keep completing while it spins: a guest spinning in
// native code with no check would stall every collection, and with it the
// whole process.
//
// It runs alone, before the parallel tests: the collections it counts are
// the whole process's, and other tests' heaps and work would slow them.
func TestRunawayGuestIsStopped(t *testing.T) {
	f, err := wazerohost.New(context.Background(), wazerohost.Config{Wasm: stiletest.BuildWasm(t, testTenant), Logger: quietLog, CacheDir: wazeroCache()})
	require.NoError(t, err)
	require.Equal(t, "loops", f.RunawayGuard(), "the module's loops were instrumented")
	// The deadline leaves a loaded machine time for collections to run
	// while the guest spins (at 300 ms, none completed once on two busy cores).
	m := stiletest.New(t, stiletest.Config{Factory: f, CallTimeout: 2 * time.Second}).Manager()
	enqueue := func(args string) (do.Response, error) {
		body, _ := json.Marshal(api.EnqueueRequest{Kind: "test.spin", Args: json.RawMessage(args)})
		return m.Do(context.Background(), "spin", do.Request{Kind: do.KindAPI, Method: "POST", Path: "/v1/t/spin/jobs", Body: body})
	}
	resp, err := enqueue(`{}`)
	require.NoError(t, err)
	require.Equal(t, 201, resp.Status)

	spinning := make(chan struct{})
	var collections atomic.Int64
	go func() {
		for {
			select {
			case <-spinning:
				return
			default:
				runtime.GC()
				collections.Add(1)
			}
		}
	}()
	_, err = enqueue(`{"spin":true}`)
	close(spinning)
	require.ErrorIs(t, err, host.ErrTrapped, "the runaway call was stopped")
	require.ErrorContains(t, err, "ran past its deadline")
	require.Greater(t, collections.Load(), int64(1), "collections completed while the guest spun")
	require.Equal(t, int64(1), m.Restarts("spin"))

	resp, err = enqueue(`{}`)
	require.NoError(t, err, "the tenant keeps serving")
	require.Equal(t, 201, resp.Status)
	var j api.Job
	require.NoError(t, json.Unmarshal(resp.Body, &j))
	require.Equal(t, "2", j.ID, "the stopped request wrote nothing")
}
