package worker

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An item that keeps failing in transit waits out its pauses off the line:
// items made meanwhile are sent and answered first.
func TestARetriedItemDoesNotHoldUpTheOthers(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	failsLeft := 3
	var sent [][]string
	b := newBatcher(100, func(items []string) ([]string, []error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, items)
		errs := make([]error, len(items))
		for i, it := range items {
			if it == "x" && failsLeft > 0 {
				failsLeft--
				errs[i] = errors.New("in transit")
			}
		}
		return items, errs
	}, func(int, time.Duration, error) {})
	always := func(error) bool { return true }

	answered := make(chan string, 2)
	go func() {
		res, err := b.do("x", always)
		require.NoError(t, err)
		answered <- res
	}()
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(sent) > 0 }, 5*time.Second, time.Millisecond)
	go func() {
		res, err := b.do("y", always)
		require.NoError(t, err)
		answered <- res
	}()
	require.Equal(t, "y", <-answered, "y was answered while x waited to be sent again")
	require.Equal(t, "x", <-answered, "x was sent again until it went through")
	mu.Lock()
	defer mu.Unlock()
	require.Zero(t, failsLeft)
}

// An item whose again says no is answered with its error at once.
func TestAnItemNotToBeSentAgainGetsItsError(t *testing.T) {
	t.Parallel()
	calls := 0
	b := newBatcher(100, func(items []string) ([]string, []error) {
		calls++
		return nil, []error{errors.New("refused")}
	}, func(int, time.Duration, error) {})
	_, err := b.do("x", func(error) bool { return false })
	require.EqualError(t, err, "refused")
	_, err = b.alone("x", func(error) bool { return false })
	require.EqualError(t, err, "refused")
	require.Equal(t, 2, calls)
}
