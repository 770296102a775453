// Package sqltext compacts SQL for embedding: comments go, runs of space
// become one, and quoted text is left exactly as written.
package sqltext

import "strings"

// Compact returns sql without its -- and /* */ comments, each run of
// whitespace outside quotes collapsed to one space (a newline if the run
// had one), and the ends trimmed. Text in '…', "…", `…` and […] is kept
// byte for byte.
func Compact(sql string) string {
	var b strings.Builder
	space := byte(0) // pending separator: 0, ' ' or '\n'
	emit := func(s string) {
		if space != 0 && b.Len() > 0 {
			b.WriteByte(space)
		}
		space = 0
		b.WriteString(s)
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				i = len(sql)
			} else {
				i += end + 4
			}
			if space == 0 {
				space = ' '
			}
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\n':
			if c == '\n' {
				space = '\n'
			} else if space == 0 {
				space = ' '
			}
			i++
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closing := c
			if c == '[' {
				closing = ']'
			}
			j := i + 1
			for j < len(sql) {
				if sql[j] == closing {
					if closing != ']' && j+1 < len(sql) && sql[j+1] == closing {
						j += 2 // a doubled quote is a quote
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(sql))
			emit(sql[i:j])
			i = j
		default:
			j := i + 1
			for j < len(sql) && !strings.ContainsRune(" \t\r\f\n'\"`[-/", rune(sql[j])) {
				j++
			}
			emit(sql[i:j])
			i = j
		}
	}
	return b.String()
}
