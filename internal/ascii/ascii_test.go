package ascii_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/internal/ascii"
)

// On ASCII text the functions agree with the strings package's.
func TestAgreesWithStringsOnASCII(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "select", "SELECT", "SeLeCt * FROM x", "  a \t b\n c  ", "0 */5 * * * *", "@every 90s", "a_B-c.D", " \v\f\r"} {
		require.Equal(t, strings.ToUpper(s), ascii.ToUpper(s), "%q", s)
		require.Equal(t, strings.ToLower(s), ascii.ToLower(s), "%q", s)
		require.Equal(t, strings.TrimSpace(s), ascii.TrimSpace(s), "%q", s)
		require.Equal(t, strings.Fields(s), nilIfEmpty(ascii.Fields(s)), "%q", s)
		for _, o := range []string{"select", "SELECT", "selecT ", "from"} {
			require.Equal(t, strings.EqualFold(s, o), ascii.EqualFold(s, o), "%q %q", s, o)
		}
	}
	// Beyond ASCII, bytes are left alone: a Kelvin sign is not a K.
	require.False(t, ascii.EqualFold("\u212a", "k"))
	require.Equal(t, "ÉTÉ", ascii.ToUpper("ÉtÉ"))
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return []string{}
	}
	return s
}

func FuzzASCII(f *testing.F) {
	f.Add("SeLeCt  a\tb")
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return
			}
		}
		require.Equal(t, strings.ToUpper(s), ascii.ToUpper(s))
		require.Equal(t, strings.ToLower(s), ascii.ToLower(s))
		require.Equal(t, strings.TrimSpace(s), ascii.TrimSpace(s))
		require.True(t, ascii.EqualFold(s, strings.ToUpper(s)))
	})
}
