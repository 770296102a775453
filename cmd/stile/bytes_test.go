package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseBytes(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "768MiB": 768 << 20, "1GiB": 1 << 30, "1.5GiB": 3 << 29, "512 KiB": 512 << 10, "2GB": 2e9, "10B": 10} {
		got, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "lots", "-1MiB", "1TiB", "NaN", "Inf", "1e30GiB"} {
		_, err := parseBytes(bad)
		require.ErrorContains(t, err, "is not a size", bad)
	}
}
