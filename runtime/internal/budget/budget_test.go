package budget

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFitCutsAtTheBudgetKeepingOneRow(t *testing.T) {
	require.Equal(t, 0, Fit(nil, 10))
	require.Equal(t, 3, Fit([]int64{3, 3, 4}, 10), "exactly the budget fits")
	require.Equal(t, 2, Fit([]int64{3, 3, 5}, 10))
	require.Equal(t, 1, Fit([]int64{50, 1}, 10), "a row larger than the budget alone still goes")
	require.Equal(t, 3, Fit([]int64{50, 50, 50}, 0), "no budget")
}
