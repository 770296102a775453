package workerd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTheLogKeepsItsNewestPart(t *testing.T) {
	t.Parallel()
	var l lockedBuffer
	line := strings.Repeat("x", 1023) + "\n"
	for range 3 * maxLog / len(line) {
		l.Write([]byte(line))
	}
	l.Write([]byte("the last line\n"))
	require.LessOrEqual(t, len(l.String()), maxLog)
	require.True(t, strings.HasSuffix(l.String(), "the last line\n"))
}
