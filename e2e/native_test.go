package e2e_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/e2e/testapp"
	"github.com/stile-run/stile/host/native"
)

func TestNative(t *testing.T) {
	t.Parallel()
	f := newFaults()
	factory, err := native.New(native.Config{App: testapp.App(), Fault: f.check})
	require.NoError(t, err)
	runSuite(t, newInProcess(t, factory, f))
}
