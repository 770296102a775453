package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseBytes reads a size as flags take it: a number of bytes, or one
// with a unit (KiB, MiB, GiB, or KB, MB, GB in powers of ten); "0" is no
// bound.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mul := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mul = strings.TrimSpace(rest), u.mul
			break
		}
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || n < 0 || math.IsNaN(n) || math.IsInf(n, 0) || n*float64(mul) > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size: write bytes or a number with KiB, MiB or GiB (e.g. 512MiB)", s)
	}
	return int64(n * float64(mul)), nil
}
