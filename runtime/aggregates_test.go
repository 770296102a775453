package runtime_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/client"
	"github.com/stile-run/stile/runtime"
	"github.com/stile-run/stile/stiletest"
)

// syncBuffer is a log destination the host's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func explodeInDecide(struct{}, runtime.Command) (runtime.Decision, error) {
	panic("the ledger exploded")
}

// A panic in an aggregate's Decide is a bug in the module, not a business
// refusal: 500 decide_panicked, nothing written, and its stack in the
// host's log.
func TestAPanicInDecideIsABugWithItsStackLogged(t *testing.T) {
	app := runtime.NewApp()
	runtime.RegisterAggregate(app, runtime.Aggregate[struct{}]{Name: "ledger", Decide: explodeInDecide})
	logs := &syncBuffer{}
	h := stiletest.New(t, stiletest.Config{App: app, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	ten := h.Tenant("acme")
	ctx := context.Background()
	_, err := ten.Command(ctx, api.Command{ID: "c1", Aggregate: "ledger", AggregateID: "l1", Type: "Post"})
	require.Equal(t, api.CodeDecidePanicked, client.Code(err))
	var ce *api.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, http.StatusInternalServerError, ce.Status)
	require.Contains(t, ce.Message, "the ledger exploded")
	require.Contains(t, logs.String(), "explodeInDecide", "the stack names the panicking function")
	_, err = ten.GetCommand(ctx, "c1")
	require.Equal(t, api.CodeNotFound, client.Code(err), "nothing was written")
	page, err := ten.Stream(ctx, "ledger:l1", 1, 10)
	require.NoError(t, err)
	require.Empty(t, page.Events)
}
