package e2e_test

import (
	"testing"

	"github.com/stile-run/stile/stiletest"
)

func TestWazero(t *testing.T) {
	t.Parallel()
	f := newFaults()
	runSuite(t, newInProcess(t, stiletest.Config{Package: testTenant}, f))
}
