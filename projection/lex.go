package projection

type tokenKind int

const (
	tWord        tokenKind = iota // a keyword or an identifier
	tQuoted                       // "x", `x`, [x]
	tString                       // 'x'
	tNumber                       // 12, 1.5e3, 0x1f
	tParam                        // ?, ?1, :name, @name, $name
	tPlaceholder                  // {name}: text is the name
	tPunct                        // anything else, one character (or || etc.)
)

type token struct {
	kind       tokenKind
	text       string
	start, end int // byte offsets in the statement
}

// lex splits a statement into tokens, skipping space and comments.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := indexFrom(s, "*/", i+2)
			if end < 0 {
				return nil, refuse("unterminated /* comment")
			}
			i = end + 2
			continue
		case c == '\'':
			j, err := closeQuote(s, i, '\'')
			if err != nil {
				return nil, err
			}
			i = j
			out = append(out, token{tString, s[start:i], start, i})
		case c == '"' || c == '`':
			j, err := closeQuote(s, i, c)
			if err != nil {
				return nil, err
			}
			i = j
			out = append(out, token{tQuoted, s[start:i], start, i})
		case c == '[':
			j := indexFrom(s, "]", i+1)
			if j < 0 {
				return nil, refuse("unterminated [identifier")
			}
			i = j + 1
			out = append(out, token{tQuoted, s[start:i], start, i})
		case c == '{':
			j := indexFrom(s, "}", i+1)
			if j < 0 {
				return nil, refuse("unterminated {placeholder")
			}
			name := s[i+1 : j]
			if !ValidName(name) {
				return nil, refuse("{%s} is not a valid table placeholder: use %s", name, NameRule)
			}
			i = j + 1
			out = append(out, token{tPlaceholder, name, start, i})
		case isWordStart(c):
			for i < len(s) && isWordPart(s[i]) {
				i++
			}
			out = append(out, token{tWord, s[start:i], start, i})
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			for i < len(s) && (isWordPart(s[i]) || s[i] == '.' ||
				(s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E')) {
				i++
			}
			out = append(out, token{tNumber, s[start:i], start, i})
		case c == '?' || c == ':' || c == '@' || c == '$':
			i++
			for i < len(s) && isWordPart(s[i]) {
				i++
			}
			out = append(out, token{tParam, s[start:i], start, i})
		default:
			i++
			out = append(out, token{tPunct, s[start:i], start, i})
		}
	}
	return out, nil
}

func isWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' || c == '$' }

// closeQuote returns the index after the quote that closes the one at i
// (a doubled quote is an escaped one).
func closeQuote(s string, i int, q byte) (int, error) {
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, nil
		}
	}
	return 0, refuse("unterminated %c quote", q)
}

func indexFrom(s, sub string, from int) int {
	for j := from; j+len(sub) <= len(s); j++ {
		if s[j:j+len(sub)] == sub {
			return j
		}
	}
	return -1
}
