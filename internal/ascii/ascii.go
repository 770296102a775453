// Package ascii has the few case and space functions the tenant module
// needs, for ASCII text: SQL keywords, cron fields, names. The strings
// package's versions handle all of Unicode, and linking its case tables
// made every tenant module 7 KB bigger gzipped.
package ascii

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// EqualFold reports whether a and b are equal ignoring ASCII case.
func EqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

// ToUpper maps ASCII letters to upper case; other bytes stay.
func ToUpper(s string) string { return mapBytes(s, upper) }

// ToLower maps ASCII letters to lower case; other bytes stay.
func ToLower(s string) string { return mapBytes(s, lower) }

func mapBytes(s string, f func(byte) byte) string {
	for i := 0; i < len(s); i++ {
		if f(s[i]) != s[i] {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = f(b[j])
			}
			return string(b)
		}
	}
	return s
}

// IsSpace reports whether c is ASCII white space.
func IsSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// TrimSpace trims ASCII white space from both ends of s.
func TrimSpace(s string) string {
	for len(s) > 0 && IsSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && IsSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	return s
}

// Fields splits s around runs of ASCII white space.
func Fields(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		for i < len(s) && IsSpace(s[i]) {
			i++
		}
		j := i
		for j < len(s) && !IsSpace(s[j]) {
			j++
		}
		if j > i {
			out = append(out, s[i:j])
		}
		i = j
	}
	return out
}
