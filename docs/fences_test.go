package docs_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryMarkdownFenceStandsOnItsOwnLine reads every Markdown file of
// the repository: a code fence (```) opens or closes only at the start of
// a line, and every fence that opens closes. A fence written after text
// on the same line ("… works.```") is no fence, so the block it meant to
// close swallows the prose and headings after it.
func TestEveryMarkdownFenceStandsOnItsOwnLine(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("git", "-C", "..", "ls-files", "*.md").Output()
	require.NoError(t, err, "list the repository's Markdown files")
	files := strings.Fields(string(out))
	require.NotEmpty(t, files)
	for _, name := range files {
		f, err := os.Open("../" + name)
		require.NoError(t, err)
		open := 0 // the line of the fence that is open, 0: none
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			trimmed := strings.TrimLeft(line, " \t")
			switch {
			case strings.HasPrefix(trimmed, "```"):
				if open == 0 {
					open = n
				} else {
					open = 0
				}
			case strings.Contains(line, "```"):
				t.Errorf("%s:%d: a code fence after text on the same line (put it on a line of its own): %s", name, n, line)
			}
		}
		require.NoError(t, sc.Err())
		f.Close()
		if open != 0 {
			t.Errorf("%s:%d: this code fence is never closed", name, open)
		}
	}
}
