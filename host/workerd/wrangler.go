package workerd

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// Wrangler is what Stile owns of a wrangler config: the entry, and the
// tables that bind its classes and ship its modules. UpdateWrangler
// rewrites only these in a user's wrangler.toml and leaves every other
// byte as it was: the Worker's name, vars, other bindings, comments.
type Wrangler struct {
	// Name is the Worker's name, written only into a new file (an existing
	// file's name is kept, and named by the EXECUTOR binding).
	Name string
	// Main is the entry module, relative to the config's directory
	// (build/worker.mjs, or build/edge.mjs with edge executors).
	Main string
	// Edge adds the EXECUTOR service binding to the Worker itself, which
	// the Tenant class pushes through.
	Edge bool
}

// CompatibilityDate is the date a new config gets: at or before the
// newest Miniflare 4 (the test harness) accepts, so tests and deployments
// run one configuration. An existing config keeps its own.
const CompatibilityDate = "2026-08-01"

// ownedBlock is one of the tables Stile owns, by what identifies it.
type ownedBlock struct {
	header, key, value string
	text               string
}

func (w Wrangler) blocks() []ownedBlock {
	bs := []ownedBlock{
		{"[[rules]]", "type", "CompiledWasm", "[[rules]]\ntype = \"CompiledWasm\"\nglobs = [\"**/*.wasm\"]\nfallthrough = false\n"},
		{"[[durable_objects.bindings]]", "name", "TENANT", "[[durable_objects.bindings]]\nname = \"TENANT\"\nclass_name = \"Tenant\"\n"},
		{"[[durable_objects.bindings]]", "name", "DIRECTORY", "[[durable_objects.bindings]]\nname = \"DIRECTORY\"\nclass_name = \"Directory\"\n"},
	}
	if w.Edge {
		bs = append(bs, ownedBlock{"[[services]]", "binding", "EXECUTOR",
			"# The Tenant class pushes ready work to the edge executor through the\n# Worker's own service binding: it names this Worker.\n[[services]]\nbinding = \"EXECUTOR\"\nservice = " + strconv.Quote(w.Name) + "\n"})
	}
	return append(bs,
		ownedBlock{"[[migrations]]", "tag", "stile-v1", "[[migrations]]\ntag = \"stile-v1\"\nnew_sqlite_classes = [\"Tenant\"]\n"},
		ownedBlock{"[[migrations]]", "tag", "stile-v2", "[[migrations]]\ntag = \"stile-v2\"\nnew_sqlite_classes = [\"Directory\"]\n"})
}

// allOwned are every table Stile may own, so a build without edge
// executors removes the EXECUTOR binding a build with them wrote.
var allOwned = Wrangler{Edge: true}.blocks()

// ErrWranglerForm means the config uses a form of TOML the updater does
// not edit (an inline table for a section Stile owns, a multi-line
// string).
var ErrWranglerForm = errors.New("wrangler config")

// UpdateWrangler returns the config old (nil: none yet) with Stile's keys
// and tables as w says, and every other line unchanged.
func UpdateWrangler(old []byte, w Wrangler) ([]byte, error) {
	if w.Name == "" {
		w.Name = "stile"
	}
	if len(bytes.TrimSpace(old)) == 0 {
		old = []byte("# The Worker of a Stile deployment. `stile build` keeps the entry (main)\n" +
			"# and the tables that bind Stile's classes; everything else is yours.\n" +
			"name = " + strconv.Quote(w.Name) + "\n")
	}
	text := string(old)
	if strings.Contains(text, `"""`) || strings.Contains(text, "'''") {
		return nil, errors.Join(ErrWranglerForm, errors.New("multi-line strings are not edited by stile build: write them on one line"))
	}
	lines := strings.SplitAfter(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		lines[len(lines)-1] += "\n"
	}
	// The top-level keys come before the first table.
	first := len(lines)
	for i, l := range lines {
		if isHeader(l) {
			first = i
			break
		}
	}
	top, tables := lines[:first], lines[first:]
	for _, l := range top {
		k, _ := keyValue(l)
		if k == "durable_objects" || k == "rules" || k == "migrations" || k == "services" {
			return nil, errors.Join(ErrWranglerForm, errors.New("write "+k+" as [["+k+"]] tables, which stile build edits"))
		}
	}
	if i := findKey(top, "name"); i >= 0 {
		// The EXECUTOR binding names the Worker as the config does.
		if _, v := keyValue(top[i]); strings.HasPrefix(v, `"`) {
			if n, err := strconv.Unquote(v); err == nil {
				w.Name = n
			}
		}
	}
	top = setKey(top, "main", strconv.Quote(w.Main), "name")
	if idx := findKey(top, "compatibility_date"); idx < 0 {
		top = setKey(top, "compatibility_date", strconv.Quote(CompatibilityDate), "main")
	}

	// Tables: split into blocks at each header.
	type block struct{ lines []string }
	var blocks []block
	for _, l := range tables {
		if isHeader(l) || len(blocks) == 0 {
			blocks = append(blocks, block{})
		}
		blocks[len(blocks)-1].lines = append(blocks[len(blocks)-1].lines, l)
	}
	want := w.blocks()
	done := make([]bool, len(want))
	var out strings.Builder
	for _, l := range top {
		out.WriteString(l)
	}
	for _, b := range blocks {
		id := identify(b.lines)
		if id < 0 {
			for _, l := range b.lines {
				out.WriteString(l)
			}
			continue
		}
		// Stile's table: its lines up to the last key are replaced (or
		// dropped), what follows (blank lines, a comment on the next
		// table) stays.
		last := 0
		for i, l := range b.lines {
			if k, _ := keyValue(l); k != "" || isHeader(l) {
				last = i
			}
		}
		if wi := wantIndex(want, allOwned[id]); wi >= 0 && !done[wi] {
			out.WriteString(tableText(want[wi]))
			done[wi] = true
		}
		for _, l := range b.lines[last+1:] {
			out.WriteString(l)
		}
	}
	for i, b := range want {
		if !done[i] {
			s := out.String()
			if !strings.HasSuffix(s, "\n\n") {
				out.WriteString("\n")
			}
			out.WriteString(b.text)
		}
	}
	return []byte(out.String()), nil
}

// tableText is a table without its comment (which only a new table gets).
func tableText(b ownedBlock) string {
	i := strings.Index(b.text, b.header)
	return b.text[i:]
}

func wantIndex(want []ownedBlock, b ownedBlock) int {
	for i, w := range want {
		if w.header == b.header && w.value == b.value {
			return i
		}
	}
	return -1
}

// identify says which of allOwned a table is, or -1 for one of the user's.
func identify(lines []string) int {
	if len(lines) == 0 || !isHeader(lines[0]) {
		return -1
	}
	header := strings.TrimSpace(lines[0])
	if i := strings.Index(header, "#"); i >= 0 {
		header = strings.TrimSpace(header[:i])
	}
	for i, b := range allOwned {
		if header != b.header {
			continue
		}
		for _, l := range lines[1:] {
			if k, v := keyValue(l); k == b.key && v == strconv.Quote(b.value) {
				return i
			}
		}
	}
	return -1
}

func isHeader(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "[") }

// keyValue reads a `key = value` line (value as written, comment cut);
// "" for anything else.
func keyValue(l string) (string, string) {
	t := strings.TrimSpace(l)
	if t == "" || t[0] == '#' || t[0] == '[' {
		return "", ""
	}
	k, v, ok := strings.Cut(t, "=")
	if !ok {
		return "", ""
	}
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, `"`) {
		if end := strings.Index(v[1:], `"`); end >= 0 {
			v = v[:end+2]
		}
	} else if i := strings.Index(v, "#"); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	return strings.TrimSpace(k), v
}

func findKey(lines []string, key string) int {
	for i, l := range lines {
		if k, _ := keyValue(l); k == key {
			return i
		}
	}
	return -1
}

// setKey sets a top-level key's value in place, or adds it after the line
// of key after (or last).
func setKey(lines []string, key, value, after string) []string {
	line := key + " = " + value + "\n"
	if i := findKey(lines, key); i >= 0 {
		if _, v := keyValue(lines[i]); v == value {
			return lines
		}
		lines[i] = line
		return lines
	}
	at := len(lines)
	if i := findKey(lines, after); i >= 0 {
		at = i + 1
	}
	return append(lines[:at:at], append([]string{line}, lines[at:]...)...)
}
