package e2e_test

import (
	"testing"

	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/stiletest"
)

func TestNative(t *testing.T) {
	t.Parallel()
	f := newFaults()
	runSuite(t, newInProcess(t, stiletest.Config{App: testapp.App()}, f))
}
