//go:build js && wasm

package worker

// These run under Node (GOOS=js GOARCH=wasm go test
// -exec=$(go env GOROOT)/lib/wasm/go_js_wasm_exec -run OneThread ./worker):
// the edge executor's single thread.

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// On one thread, the reports a claim's handlers make as they end one after
// the other go in one request, not the first alone and the others after it.
func TestOneThreadSendsABurstOfReportsTogether(t *testing.T) {
	var mu sync.Mutex
	var sent []int
	b := newBatcher(100, func(items []int) ([]int, []error) {
		mu.Lock()
		sent = append(sent, len(items))
		mu.Unlock()
		time.Sleep(time.Millisecond) // the request: the goroutine waits
		return items, make([]error, len(items))
	}, func(int, time.Duration, error) {})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.do(i, func(error) bool { return false })
			require.NoError(t, err)
			require.Equal(t, i, res)
		}()
	}
	wg.Wait()
	require.Equal(t, []int{10}, sent, "one request for the ten")
}
