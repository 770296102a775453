package projection

import (
	"errors"
	"strconv"
	"strings"

	"github.com/stile-run/stile/internal/ascii"
	"github.com/stile-run/stile/internal/printf"
)

// Kind is what a statement is allowed to be.
type Kind int

const (
	// Write is a handler's statement: SELECT, INSERT, UPDATE, DELETE or
	// REPLACE over the projection's tables.
	Write Kind = iota
	// Read is a registered query's statement: SELECT only.
	Read
	// Schema is a projection's table definition: CREATE TABLE {t} (...)
	// or CREATE [UNIQUE] INDEX {i} ON {t} (...).
	Schema
)

// ErrRefused matches every statement Check refuses.
var ErrRefused = errors.New("statement refused")

type refusal struct{ msg string }

func (r *refusal) Error() string        { return r.msg }
func (r *refusal) Is(target error) bool { return target == ErrRefused }

func refuse(format string, args ...any) error { return &refusal{msg: printf.Sprintf(format, args...)} }

// ValidName reports whether s can name a projection, or one of its tables
// or indexes: 1-32 characters of a-z, 0-9 and _, starting with a letter.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 32 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// NameRule describes ValidName for error messages.
const NameRule = "1-32 characters of a-z, 0-9 and _, starting with a letter"

// Physical is the table (or index) name of a projection's logical name in
// a generation: p_<projection>_<generation>_<name>.
func Physical(projection string, generation int64, name string) string {
	return "p_" + projection + "_" + strconv.FormatInt(generation, 10) + "_" + name
}

// MayCollide reports whether projections named a and b could have tables
// of the same physical name: when one name is the other followed by
// _<digits>_ (projection ab, generation 1, table x_2_t and projection
// ab_1_x, generation 2, table t are both p_ab_1_x_2_t).
func MayCollide(a, b string) bool { return extends(a, b) || extends(b, a) }

func extends(a, b string) bool {
	rest, ok := strings.CutPrefix(b, a+"_")
	if !ok {
		return false
	}
	d := 0
	for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
		d++
	}
	return d > 0 && d < len(rest) && rest[d] == '_'
}

// Check validates sql as a statement of kind k whose tables are the
// placeholders {name} of names, and returns it with each placeholder
// replaced by names[name].
func Check(sql string, k Kind, names map[string]string) (string, error) {
	toks, err := lex(sql)
	if err != nil {
		return "", err
	}
	if len(toks) == 0 {
		return "", refuse("the statement is empty")
	}
	for _, t := range toks {
		if t.kind == tPlaceholder {
			if _, ok := names[t.text]; !ok {
				return "", refuse("{%s} is not one of this projection's tables: use %s", t.text, nameList(names))
			}
		}
		if t.kind == tPunct && t.text == ";" {
			return "", refuse("one statement at a time: remove the ';'")
		}
	}
	first := ascii.ToUpper(toks[0].text)
	switch k {
	case Schema:
		if err := checkSchema(toks); err != nil {
			return "", err
		}
	case Read:
		if first != "SELECT" {
			return "", refuse("a query must be a SELECT, not %s", first)
		}
		if err := checkTables(toks, names); err != nil {
			return "", err
		}
	default:
		switch first {
		case "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE":
		case "WITH":
			return "", refuse("common table expressions (WITH) are not supported in projections: use a subquery")
		default:
			return "", refuse("a projection handler may SELECT, INSERT, UPDATE, DELETE or REPLACE, not %s", first)
		}
		if err := checkTables(toks, names); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if t.kind == tPlaceholder {
			b.WriteString(sql[last:t.start])
			b.WriteString(names[t.text])
			last = t.end
		}
	}
	b.WriteString(sql[last:])
	return b.String(), nil
}

func nameList(names map[string]string) string {
	var out []string
	for n := range names {
		out = append(out, "{"+n+"}")
	}
	if len(out) == 0 {
		return "no tables"
	}
	sortStrings(out)
	return strings.Join(out, ", ")
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// clauseEnd are the keywords that end a FROM list. (ON and USING do not:
// a comma after a join's condition names another table.)
var clauseEnd = map[string]bool{"WHERE": true, "GROUP": true, "ORDER": true, "LIMIT": true, "HAVING": true,
	"WINDOW": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "SET": true,
	"VALUES": true, "RETURNING": true, "SELECT": true, "DEFAULT": true}

// tablePosition keywords are followed by a table.
var tablePosition = map[string]bool{"FROM": true, "JOIN": true, "INTO": true, "UPDATE": true, "TABLE": true}

// tableFunctions are the table-valued functions a projection may read.
var tableFunctions = map[string]bool{"json_each": true, "json_tree": true}

// checkTables requires every table position to hold a placeholder, a
// subquery or json_each/json_tree: after FROM, JOIN, INTO, UPDATE, TABLE,
// a comma of a FROM list, IN (x IN table) and an opening parenthesis in
// one of these positions. It also refuses any name of Stile's, SQLite's,
// the platform's or another projection's tables wherever it appears.
func checkTables(toks []token, names map[string]string) error {
	type frame struct{ inFrom bool }
	stack := []frame{{}}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == tWord || t.kind == tQuoted {
			if n := unquote(t); reservedName(n) {
				return refuse("%s names a table that is not this projection's: name tables as placeholders (%s)", n, nameList(names))
			}
		}
		top := &stack[len(stack)-1]
		switch {
		case t.kind == tPunct && t.text == "(":
			stack = append(stack, frame{})
			continue
		case t.kind == tPunct && t.text == ")":
			if len(stack) > 1 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		up := ascii.ToUpper(t.text)
		position := false
		switch {
		case t.kind == tWord && tablePosition[up] && !notATable(toks, i):
			position = true
			top.inFrom = up == "FROM" || up == "JOIN"
		case t.kind == tPunct && t.text == "," && top.inFrom:
			position = true
		case t.kind == tWord && up == "IN":
			position = i+1 < len(toks) && !(toks[i+1].kind == tPunct && toks[i+1].text == "(")
		case t.kind == tWord && clauseEnd[up]:
			top.inFrom = false
		}
		if !position || i+1 >= len(toks) {
			continue
		}
		j := i + 1
		if up == "UPDATE" && j+1 < len(toks) && ascii.EqualFold(toks[j].text, "OR") {
			j += 2 // UPDATE OR IGNORE {t}
		}
		// Opening parentheses in a table position hold a subquery, or
		// a table or a join (checked here, and inside as a FROM list).
		for j < len(toks) && toks[j].kind == tPunct && toks[j].text == "(" {
			j++
			if j < len(toks) && (toks[j].kind == tWord || toks[j].kind == tQuoted) {
				switch ascii.ToUpper(toks[j].text) {
				case "SELECT", "VALUES", "WITH":
					j = len(toks) // a subquery: checked as it goes
				}
			}
			if j < len(toks) {
				stack = append(stack, frame{inFrom: true})
				i = j - 1
			}
		}
		if j >= len(toks) {
			continue
		}
		next := toks[j]
		switch {
		case next.kind == tPlaceholder:
			i = j
		case next.kind == tWord && isFunction(toks, j):
			if !tableFunctions[ascii.ToLower(next.text)] {
				return refuse("%s is not allowed in a projection: of table-valued functions, use json_each or json_tree", next.text)
			}
		default:
			return refuse("name tables as placeholders: %q after %s is not one of this projection's tables (%s)",
				next.text, t.text, nameList(names))
		}
	}
	return nil
}

// unquote is an identifier's name without its quotes.
func unquote(t token) string {
	if t.kind != tQuoted || len(t.text) < 2 {
		return t.text
	}
	return t.text[1 : len(t.text)-1]
}

// reservedName reports whether name is, or may be, a table no projection
// may touch: Stile's (stile_), SQLite's (sqlite_), the platform's (_cf_)
// or a projection's generation (p_<projection>_<generation>_).
func reservedName(name string) bool {
	n := ascii.ToLower(name)
	if strings.HasPrefix(n, "stile_") || strings.HasPrefix(n, "sqlite_") || strings.HasPrefix(n, "_cf_") {
		return true
	}
	rest, ok := strings.CutPrefix(n, "p_")
	if !ok {
		return false
	}
	// p_<name>_<digits>_…
	for k := 0; k < len(rest); k++ {
		if rest[k] != '_' || k+1 >= len(rest) || rest[k+1] < '0' || rest[k+1] > '9' {
			continue
		}
		d := k + 1
		for d < len(rest) && rest[d] >= '0' && rest[d] <= '9' {
			d++
		}
		if d < len(rest) && rest[d] == '_' {
			return true
		}
	}
	return false
}

// notATable reports whether the keyword at i, though a table keyword, does
// not introduce a table here: ON CONFLICT ... DO UPDATE, IS [NOT]
// DISTINCT FROM.
func notATable(toks []token, i int) bool {
	prev := func(k int) string {
		if i-k < 0 {
			return ""
		}
		return ascii.ToUpper(toks[i-k].text)
	}
	switch ascii.ToUpper(toks[i].text) {
	case "UPDATE":
		return prev(1) == "DO"
	case "FROM":
		return prev(1) == "DISTINCT" && (prev(2) == "IS" || prev(2) == "NOT")
	}
	return false
}

func isFunction(toks []token, i int) bool {
	return i+1 < len(toks) && toks[i+1].kind == tPunct && toks[i+1].text == "("
}

// checkSchema allows CREATE TABLE [IF NOT EXISTS] {t} (...) and CREATE
// [UNIQUE] INDEX [IF NOT EXISTS] {i} ON {t} (...), placeholders only.
func checkSchema(toks []token) error {
	word := func(i int, w string) bool {
		return i < len(toks) && toks[i].kind == tWord && ascii.EqualFold(toks[i].text, w)
	}
	i := 0
	if !word(i, "CREATE") {
		return refuse("a projection's schema is CREATE TABLE and CREATE INDEX statements, not %s", toks[0].text)
	}
	i++
	if word(i, "UNIQUE") {
		i++
		if !word(i, "INDEX") {
			return refuse("expected INDEX after CREATE UNIQUE")
		}
	}
	isIndex := word(i, "INDEX")
	if !isIndex && !word(i, "TABLE") {
		return refuse("a projection's schema is CREATE TABLE and CREATE INDEX statements")
	}
	i++
	if word(i, "IF") {
		i += 3 // IF NOT EXISTS
	}
	if i >= len(toks) || toks[i].kind != tPlaceholder {
		return refuse("name the table or index as a placeholder, e.g. CREATE TABLE {orders} (...)")
	}
	i++
	if isIndex {
		if !word(i, "ON") || i+1 >= len(toks) || toks[i+1].kind != tPlaceholder {
			return refuse("name the indexed table as a placeholder: CREATE INDEX {i} ON {t} (...)")
		}
		i += 2
	}
	depth := 0
	for ; i < len(toks); i++ {
		if toks[i].kind == tWord && ascii.EqualFold(toks[i].text, "REFERENCES") {
			if i+1 >= len(toks) || toks[i+1].kind != tPlaceholder {
				return refuse("a foreign key must reference one of this projection's tables as a placeholder")
			}
		}
		switch {
		case toks[i].kind == tPunct && toks[i].text == "(":
			depth++
		case toks[i].kind == tPunct && toks[i].text == ")":
			depth--
		case depth == 0 && toks[i].kind == tWord && ascii.EqualFold(toks[i].text, "AS"):
			return refuse("CREATE TABLE ... AS is not allowed: define the columns")
		case toks[i].kind == tWord || toks[i].kind == tQuoted:
			if n := unquote(toks[i]); reservedName(n) {
				return refuse("%s names a table that is not this projection's: name tables as placeholders", n)
			}
		}
	}
	return nil
}
