package retention

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// bisect finds the highest id created by t, over ids with gaps (deleted
// jobs), in as many probes as halvings of the id range.
func TestBisectFindsTheLastIDCreatedBy(t *testing.T) {
	t.Parallel()
	// id -> created: ids 3, 4, 7, 8, 20, 21 exist.
	jobs := [][2]int64{{3, 100}, {4, 100}, {7, 200}, {8, 300}, {20, 300}, {21, 900}}
	probes := 0
	probe := func(from int64) (int64, int64, bool, error) {
		probes++
		i, _ := slices.BinarySearchFunc(jobs, from, func(j [2]int64, id int64) int { return int(j[0] - id) })
		if i == len(jobs) {
			return 0, 0, false, nil
		}
		return jobs[i][0], jobs[i][1], true, nil
	}
	for _, c := range []struct{ t, want int64 }{
		{99, 0}, {100, 4}, {199, 4}, {200, 7}, {300, 20}, {899, 20}, {900, 21}, {5000, 21},
	} {
		probes = 0
		got, err := bisect(21, c.t, probe)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "created by %d", c.t)
		require.LessOrEqual(t, probes, 6, "probes for created by %d", c.t)
	}
	got, err := bisect(0, 5000, probe)
	require.NoError(t, err)
	require.Zero(t, got, "no jobs: none created by any time")
}
