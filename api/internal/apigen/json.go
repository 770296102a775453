// Package apigen writes what package api derives from its own source, so
// each fact is written once: the JSON writers and strict readers of its
// wire types, from their struct definitions (json.go, into json_gen.go),
// and the status of each error code, from the Code constants (codes.go,
// into codes_gen.go and the code table of docs/API.md). `go generate ./api`
// runs it (api/gen.go); api's tests fail when an output is stale.
//
// The JSON code is one definition per wire type. It reads
// the package's source with go/ast (no reflection, no type checker: the
// field types a wire type may use are a closed set, below, and anything
// else is an error that asks for a decision here).
//
// Every exported struct type of the package gets AppendJSON and
// MarshalJSON, unless its doc comment ends with the directive
//
//	//stile:json -
//
// A request type gets a strict decoder with
//
//	//stile:json DecodeEnqueue          (func DecodeEnqueue([]byte) (T, error))
//	//stile:json decode                 (only the decode method: a hand-written wrapper calls it)
//
// and "fields" after either tracks which fields a body set: it generates
// the bit set TFields with a constant per field, and DecodeXFields, which
// also returns it. A decoded type that contains a type with fields (a
// batch of them) gets DecodeXFields too, returning one set per contained
// object in document order. Struct types reached from a decoded type get
// decode methods of their own.
//
// An answer a client reads gets its decoder with "answer" after DecodeX:
// it reads as encoding/json does, skipping unknown fields (a newer
// server's) and taking a repeated one's last value, and refuses what does
// not fit a field alike. Strictness is the reader's (jsonwire.Reader), so
// a type reached from both kinds of decoder has one decode method.
package apigen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/token"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// Output is the name of the generated file, in the package's directory.
const Output = "json_gen.go"

type kind int

const (
	kString kind = iota
	kInt
	kInt64
	kBool
	kRaw       // json.RawMessage
	kTime      // time.Time
	kTimePtr   // *time.Time
	kIntPtr    // *int
	kInt64Ptr  // *int64
	kStrings   // []string
	kStruct    // T
	kStructPtr // *T
	kStructs   // []T
	kRaws      // []json.RawMessage
	kCounts    // map[string]int64
)

// Field is one JSON member of a wire type, embedded structs flattened.
type Field struct {
	Path  string // Go selector from the value: "Claim.Worker"
	Name  string // the Go field name: "Worker"
	JSON  string // the member name
	Omit  bool   // omitempty
	Kind  kind
	Elem  string // the struct type of kStruct, kStructPtr, kStructs
	Conv  string // a named basic type, converted to and from
	depth int
	// Via is the embedded struct (of the type itself) the field is
	// promoted from, "" for the type's own fields. Its decode is shared:
	// the embedded type's field method reads its fields.
	Via string
}

// Type is one wire type.
type Type struct {
	Name   string
	Fields []Field
	Decode string // the top-level decoder's name, "" for none
	Method bool   // has a decode method
	Track  bool   // tracks presence ("fields")
	Answer bool   // the top-level decoder reads an answer, leniently ("answer")
	Skip   bool
	Field  bool // has a field method: another decoded type embeds it

	visited bool
	File    string
	pos     token.Pos
}

type pkg struct {
	fset    *token.FileSet
	structs map[string]*ast.StructType
	basics  map[string]string // named types over basic ones: name → basic
	aliases map[string]bool
	types   map[string]*Type
	order   []string // declaration order of exported structs
}

// Generate reads the Go files of the package in dir (not tests, not the
// generated file) and returns the generated file's content.
func Generate(dir string) ([]byte, error) {
	p, err := load(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := p.write(&b); err != nil {
		return nil, err
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("apigen: gofmt the output: %w\n%s", err, b.Bytes())
	}
	return out, nil
}

// Types lists the package's wire types (for tests: every one needs a fixture).
func Types(dir string) ([]Type, error) {
	p, err := load(dir)
	if err != nil {
		return nil, err
	}
	var out []Type
	for _, n := range p.order {
		if t := p.types[n]; !t.Skip {
			out = append(out, *t)
		}
	}
	return out, nil
}

func load(dir string) (*pkg, error) {
	fset, files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{fset: fset, structs: map[string]*ast.StructType{}, basics: map[string]string{},
		aliases: map[string]bool{}, types: map[string]*Type{}}
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(g.Specs) == 1 {
					doc = g.Doc
				}
				switch t := ts.Type.(type) {
				case *ast.StructType:
					p.structs[ts.Name.Name] = t
					if !ts.Name.IsExported() {
						continue
					}
					typ := &Type{Name: ts.Name.Name, File: filepath.Base(fset.Position(f.Package).Filename), pos: ts.Pos()}
					if err := typ.directives(doc); err != nil {
						return nil, fmt.Errorf("%s: %w", fset.Position(ts.Pos()), err)
					}
					p.types[typ.Name] = typ
					p.order = append(p.order, typ.Name)
				case *ast.Ident:
					if basic(t.Name) {
						p.basics[ts.Name.Name] = t.Name
						p.aliases[ts.Name.Name] = ts.Assign.IsValid()
					}
				}
			}
		}
	}
	for _, n := range p.order {
		t := p.types[n]
		if t.Skip {
			continue
		}
		fs, err := p.fields(p.structs[n], "", 0)
		if err != nil {
			return nil, fmt.Errorf("apigen: %s: %w", n, err)
		}
		t.Fields, err = dominant(fs)
		if err != nil {
			return nil, fmt.Errorf("apigen: %s: %w", n, err)
		}
		if len(t.Fields) > 64 && t.Track {
			return nil, fmt.Errorf("apigen: %s: more than 64 fields do not fit its presence bits", n)
		}
	}
	// Decode methods for every struct a decoded type reaches, field methods
	// for the structs they embed.
	var need func(n string, field bool) error
	need = func(n string, field bool) error {
		t := p.types[n]
		if t == nil || t.Skip {
			return fmt.Errorf("apigen: %s is decoded but is no wire type", n)
		}
		if t.visited {
			t.Method = t.Method || !field
			t.Field = t.Field || field
			return nil
		}
		t.visited = true
		t.Method = t.Method || !field
		t.Field = t.Field || field
		for _, f := range t.Fields {
			if f.Via != "" {
				if t.Track {
					return fmt.Errorf("apigen: %s: a type with fields embeds no struct (yet)", n)
				}
				if err := need(f.Via, true); err != nil {
					return err
				}
				continue
			}
			switch f.Kind {
			case kStruct, kStructs, kStructPtr:
				if err := need(f.Elem, false); err != nil {
					return err
				}
			case kCounts:
				return fmt.Errorf("apigen: %s.%s: decoding %s is not written yet", n, f.Path, kindName(f.Kind))
			}
		}
		return nil
	}
	for _, n := range p.order {
		if t := p.types[n]; t.Method {
			if err := need(n, false); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

func ignored(f *ast.File) bool {
	for _, c := range f.Comments {
		if c.Pos() > f.Package {
			break
		}
		for _, l := range c.List {
			if strings.HasPrefix(l.Text, "//go:build") && strings.Contains(l.Text, "ignore") {
				return true
			}
		}
	}
	return false
}

func (t *Type) directives(doc *ast.CommentGroup) error {
	if doc == nil {
		return nil
	}
	for _, c := range doc.List {
		rest, ok := strings.CutPrefix(c.Text, "//stile:json ")
		if !ok {
			continue
		}
		for _, w := range strings.Fields(rest) {
			switch {
			case w == "-":
				t.Skip = true
			case w == "decode":
				t.Method = true
			case w == "fields":
				t.Track = true
			case w == "answer":
				t.Answer = true
			case strings.HasPrefix(w, "Decode"):
				t.Decode, t.Method = w, true
			default:
				return fmt.Errorf("unknown //stile:json word %q (use -, decode, DecodeX, fields or answer)", w)
			}
		}
	}
	if t.Track && !t.Method {
		return fmt.Errorf("//stile:json fields needs decode or DecodeX")
	}
	if t.Answer && (t.Decode == "" || t.Track) {
		return fmt.Errorf("//stile:json answer needs DecodeX, and tracks no fields")
	}
	return nil
}

func basic(n string) bool { return n == "string" || n == "int" || n == "int64" || n == "bool" }

func (p *pkg) fields(st *ast.StructType, prefix string, depth int) ([]Field, error) {
	var out []Field
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			s, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				return nil, err
			}
			tag = reflect.StructTag(s).Get("json")
		}
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		omit := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				omit = true
			case "", "string", "omitzero":
				if o != "" {
					return nil, fmt.Errorf("json option %q is not written yet", o)
				}
			}
		}
		if len(f.Names) == 0 { // embedded
			id, ok := f.Type.(*ast.Ident)
			if !ok {
				return nil, fmt.Errorf("embedded %s: only the package's own structs may be embedded", p.expr(f.Type))
			}
			sub, ok := p.structs[id.Name]
			if !ok {
				return nil, fmt.Errorf("embedded %s is no struct of the package", id.Name)
			}
			if name == "" {
				if !id.IsExported() {
					continue
				}
				fs, err := p.fields(sub, prefix+id.Name+".", depth+1)
				if err != nil {
					return nil, err
				}
				for i := range fs {
					if depth == 0 {
						fs[i].Via = id.Name
					}
				}
				out = append(out, fs...)
				continue
			}
			f.Names = []*ast.Ident{id}
		}
		for _, n := range f.Names {
			if !n.IsExported() {
				continue
			}
			fd := Field{Path: prefix + n.Name, Name: n.Name, JSON: name, Omit: omit, depth: depth}
			if fd.JSON == "" {
				fd.JSON = n.Name
			}
			if err := p.kind(&fd, f.Type); err != nil {
				return nil, fmt.Errorf("field %s: %w", n.Name, err)
			}
			out = append(out, fd)
		}
	}
	return out, nil
}

// dominant applies encoding/json's rule to flattened fields: of fields with
// the same name the shallowest wins; two at the same depth are an error
// here (encoding/json would drop both, silently).
func dominant(fs []Field) ([]Field, error) {
	var out []Field
	for i, f := range fs {
		keep := true
		for j, g := range fs {
			if i == j || g.JSON != f.JSON {
				continue
			}
			if g.depth == f.depth {
				return nil, fmt.Errorf("fields %s and %s are both %q", f.Path, g.Path, f.JSON)
			}
			if g.depth < f.depth {
				if g.Via != "" {
					return nil, fmt.Errorf("%s shadows %s: shadowing between embedded structs is not written yet", g.Path, f.Path)
				}
				keep = false
			}
		}
		if keep {
			out = append(out, f)
		}
	}
	return out, nil
}

func (p *pkg) expr(e ast.Expr) string {
	var b bytes.Buffer
	_ = format.Node(&b, p.fset, e)
	return b.String()
}

func (p *pkg) kind(f *Field, e ast.Expr) error {
	switch t := e.(type) {
	case *ast.Ident:
		if basic(t.Name) {
			f.Kind = basicKind(t.Name)
			return nil
		}
		if b, ok := p.basics[t.Name]; ok {
			f.Kind = basicKind(b)
			if !p.aliases[t.Name] {
				f.Conv = t.Name
			}
			return nil
		}
		if _, ok := p.structs[t.Name]; ok {
			f.Kind, f.Elem = kStruct, t.Name
			return nil
		}
	case *ast.SelectorExpr:
		switch p.expr(t) {
		case "json.RawMessage":
			f.Kind = kRaw
			return nil
		case "time.Time":
			f.Kind = kTime
			return nil
		}
	case *ast.StarExpr:
		switch x := p.expr(t.X); {
		case x == "time.Time":
			f.Kind = kTimePtr
			return nil
		case x == "int":
			f.Kind = kIntPtr
			return nil
		case x == "int64":
			f.Kind = kInt64Ptr
			return nil
		case p.structs[x] != nil:
			f.Kind, f.Elem = kStructPtr, x
			return nil
		}
	case *ast.ArrayType:
		if t.Len != nil {
			break
		}
		switch x := p.expr(t.Elt); {
		case x == "string":
			f.Kind = kStrings
			return nil
		case x == "json.RawMessage":
			f.Kind = kRaws
			return nil
		case p.structs[x] != nil:
			f.Kind, f.Elem = kStructs, x
			return nil
		}
	case *ast.MapType:
		if p.expr(t) == "map[string]int64" {
			f.Kind = kCounts
			return nil
		}
	}
	return fmt.Errorf("type %s is not written yet: teach api/internal/apigen how to read and write it", p.expr(e))
}

func basicKind(n string) kind {
	switch n {
	case "string":
		return kString
	case "int":
		return kInt
	case "int64":
		return kInt64
	}
	return kBool
}

func kindName(k kind) string {
	return [...]string{"string", "int", "int64", "bool", "json.RawMessage", "time.Time", "*time.Time", "*int",
		"*int64", "[]string", "a struct", "a struct pointer", "a struct slice", "[]json.RawMessage", "map[string]int64"}[k]
}

func (p *pkg) write(b *bytes.Buffer) error {
	var body bytes.Buffer
	for _, n := range p.order {
		t := p.types[n]
		if t.Skip {
			continue
		}
		p.writer(&body, t)
	}
	for _, n := range p.order {
		t := p.types[n]
		if t.Skip || !t.Method && !t.Field {
			continue
		}
		if t.Track {
			p.presence(&body, t)
		}
		p.decoder(&body, t)
		if err := p.top(&body, t); err != nil {
			return err
		}
	}
	b.WriteString("// Code generated by api/internal/apigen from the types of package api; DO NOT EDIT.\n\npackage api\n\nimport (\n")
	if bytes.Contains(body.Bytes(), []byte("time.Time")) {
		b.WriteString("\t\"time\"\n\n")
	}
	b.WriteString("\t\"github.com/stile-run/stile/internal/jsonwire\"\n)\n")
	b.Write(body.Bytes())
	return nil
}

func (p *pkg) writer(b *bytes.Buffer, t *Type) {
	fmt.Fprintf(b, "\n// AppendJSON appends v as JSON.\nfunc (v %s) AppendJSON(b []byte) []byte {\n\to := jsonwire.StartObject(b)\n", t.Name)
	for _, f := range t.Fields {
		x, k := "v."+f.Path, strconv.Quote(f.JSON)
		switch f.Kind {
		case kString:
			if f.Conv != "" {
				x = "string(" + x + ")"
			}
			fmt.Fprintf(b, "\to.%s(%s, %s)\n", pick(f.Omit, "StrOmit", "Str"), k, x)
		case kInt, kInt64:
			if f.Kind == kInt || f.Conv != "" {
				x = "int64(" + x + ")"
			}
			fmt.Fprintf(b, "\to.%s(%s, %s)\n", pick(f.Omit, "IntOmit", "Int"), k, x)
		case kBool:
			if f.Conv != "" {
				x = "bool(" + x + ")"
			}
			if f.Omit {
				fmt.Fprintf(b, "\tif %s {\n\t\to.Bool(%s, true)\n\t}\n", x, k)
			} else {
				fmt.Fprintf(b, "\to.Bool(%s, %s)\n", k, x)
			}
		case kRaw:
			fmt.Fprintf(b, "\to.%s(%s, %s)\n", pick(f.Omit, "RawOmit", "Raw"), k, x)
		case kTime: // omitempty never omits a struct, as in encoding/json
			fmt.Fprintf(b, "\to.Time(%s, %s)\n", k, x)
		case kTimePtr:
			if f.Omit {
				fmt.Fprintf(b, "\to.TimeOmit(%s, %s)\n", k, x)
			} else {
				fmt.Fprintf(b, "\tif %s == nil {\n\t\to.Null(%s)\n\t} else {\n\t\to.Time(%s, *%s)\n\t}\n", x, k, k, x)
			}
		case kIntPtr, kInt64Ptr:
			y := "*" + x
			if f.Kind == kIntPtr {
				y = "int64(*" + x + ")"
			}
			if f.Omit {
				fmt.Fprintf(b, "\tif %s != nil {\n\t\to.Int(%s, %s)\n\t}\n", x, k, y)
			} else {
				fmt.Fprintf(b, "\tif %s == nil {\n\t\to.Null(%s)\n\t} else {\n\t\to.Int(%s, %s)\n\t}\n", x, k, k, y)
			}
		case kRaws: // inline: a method of its own cost 1.5 KB of gzipped module
			if f.Omit {
				fmt.Fprintf(b, "\tif len(%s) > 0 {\n", x)
			}
			fmt.Fprintf(b, "\to.Key(%s)\n\to.B = append(o.B, '[')\n\tfor i, x := range %s {\n\t\tif i > 0 {\n\t\t\to.B = append(o.B, ',')\n\t\t}\n\t\to.B = append(o.B, x...)\n\t}\n\to.B = append(o.B, ']')\n", k, x)
			if f.Omit {
				b.WriteString("\t}\n")
			}
		case kStrings, kCounts:
			m := map[kind]string{kStrings: "Strings", kCounts: "Counts"}[f.Kind]
			if f.Omit {
				fmt.Fprintf(b, "\tif len(%s) > 0 {\n\t\to.%s(%s, %s)\n\t}\n", x, m, k, x)
			} else {
				fmt.Fprintf(b, "\to.%s(%s, %s)\n", m, k, x)
			}
		case kStruct:
			fmt.Fprintf(b, "\to.Key(%s)\n\to.B = %s.AppendJSON(o.B)\n", k, x)
		case kStructPtr:
			if f.Omit {
				fmt.Fprintf(b, "\tif %s != nil {\n\t\to.Key(%s)\n\t\to.B = %s.AppendJSON(o.B)\n\t}\n", x, k, x)
			} else {
				fmt.Fprintf(b, "\tif %s == nil {\n\t\to.Null(%s)\n\t} else {\n\t\to.Key(%s)\n\t\to.B = %s.AppendJSON(o.B)\n\t}\n", x, k, k, x)
			}
		case kStructs:
			if f.Omit {
				fmt.Fprintf(b, "\tif len(%s) > 0 {\n\t\to.Key(%s)\n\t\to.B = jsonwire.AppendArray(o.B, %s)\n\t}\n", x, k, x)
			} else {
				fmt.Fprintf(b, "\to.Key(%s)\n\to.B = jsonwire.AppendArray(o.B, %s)\n", k, x)
			}
		}
	}
	fmt.Fprintf(b, "\treturn o.End()\n}\n\n// MarshalJSON implements json.Marshaler.\nfunc (v %s) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }\n", t.Name)
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func (p *pkg) presence(b *bytes.Buffer, t *Type) {
	fs := t.Name + "Fields"
	fmt.Fprintf(b, "\n// %s is the set of fields a decoded %s was sent\n// with (a null counts as absent), so that 0 and absent differ.\ntype %s uint64\n\n", fs, t.Name, fs)
	fmt.Fprintf(b, "// Has reports whether every field of x was sent.\nfunc (f %s) Has(x %s) bool { return f&x == x }\n\n", fs, fs)
	fmt.Fprintf(b, "// The fields of %s, for %s.Has.\nconst (\n", t.Name, fs)
	for i, f := range t.Fields {
		fmt.Fprintf(b, "\t%s%s %s = 1 << %d // %s\n", t.Name, f.Name, fs, i, f.JSON)
	}
	b.WriteString(")\n")
}

func (p *pkg) decoder(b *bytes.Buffer, t *Type) {
	own := 0
	for _, f := range t.Fields {
		if f.Via == "" {
			own++
		}
	}
	if t.Field && own == 0 {
		fmt.Fprintf(b, "\n// field decodes the member key of an object with the fields of %s; ok\n// is false for a key that is none of them.\nfunc (v *%s) field(r *jsonwire.Reader, key string) (ok bool, err error) {\n", t.Name, t.Name)
		p.embedded(b, t, "true, err")
		b.WriteString("\treturn false, nil\n}\n")
	} else if t.Field {
		fmt.Fprintf(b, "\n// field decodes the member key of an object with the fields of %s; ok\n// is false for a key that is none of them.\nfunc (v *%s) field(r *jsonwire.Reader, key string) (ok bool, err error) {\n\tswitch key {\n", t.Name, t.Name)
		p.cases(b, t, "true, nil")
		b.WriteString("\tdefault:\n")
		p.embedded(b, t, "true, err")
		b.WriteString("\t\treturn false, nil\n\t}\n\treturn true, err\n}\n")
	}
	if !t.Method {
		return
	}
	fmt.Fprintf(b, "\n// Not inlined: each call site would carry its own copy of the closure.\n//\n//go:noinline\nfunc (v *%s) decode(r *jsonwire.Reader) error {\n", t.Name)
	if t.Field {
		b.WriteString("\treturn jsonwire.DecodeObject(r, func(key string) error {\n\t\tok, err := v.field(r, key)\n\t\tif !ok {\n\t\t\treturn r.Unknown(key)\n\t\t}\n\t\treturn err\n\t})\n}\n")
		return
	}
	if own == 0 && !t.Track {
		b.WriteString("\treturn jsonwire.DecodeObject(r, func(key string) error {\n")
		p.embedded(b, t, "err")
		b.WriteString("\t\treturn r.Unknown(key)\n\t})\n}\n")
		return
	}
	ret := "return "
	if t.Track {
		fmt.Fprintf(b, "\tvar f %sFields\n", t.Name)
		ret = "err := "
	}
	fmt.Fprintf(b, "\t%sjsonwire.DecodeObject(r, func(key string) error {\n\t\tvar err error\n", ret)
	if t.Track {
		fmt.Fprintf(b, "\t\tvar bit %sFields\n\t\tnull := r.AtNull()\n", t.Name)
	}
	b.WriteString("\t\tswitch key {\n")
	p.cases(b, t, "nil")
	b.WriteString("\t\tdefault:\n")
	p.embedded(b, t, "err")
	b.WriteString("\t\t\treturn r.Unknown(key)\n\t\t}\n")
	if t.Track {
		b.WriteString("\t\tif !null {\n\t\t\tf |= bit\n\t\t}\n")
	}
	b.WriteString("\t\treturn err\n\t})\n")
	if t.Track {
		b.WriteString("\tr.Mark(uint64(f))\n\treturn err\n")
	}
	b.WriteString("}\n")
}

// embedded tries the field methods of the structs t embeds.
func (p *pkg) embedded(b *bytes.Buffer, t *Type, ret string) {
	seen := map[string]bool{}
	for _, f := range t.Fields {
		if f.Via != "" && !seen[f.Via] {
			seen[f.Via] = true
			fmt.Fprintf(b, "\t\tif ok, err := v.%s.field(r, key); ok {\n\t\t\treturn %s\n\t\t}\n", f.Via, ret)
		}
	}
}

// cases writes the switch cases of t's own fields; null is what a case
// returns when a null leaves the field as it is.
func (p *pkg) cases(b *bytes.Buffer, t *Type, null string) {
	for _, f := range t.Fields {
		if f.Via != "" {
			continue
		}
		x := "v." + f.Path
		fmt.Fprintf(b, "\t\tcase %q:\n", f.JSON)
		if t.Track {
			fmt.Fprintf(b, "\t\t\tbit = %s%s\n", t.Name, f.Name)
		}
		switch f.Kind {
		case kTime, kTimePtr, kIntPtr, kInt64Ptr, kStruct, kStructPtr:
			fmt.Fprintf(b, "\t\t\tif r.IsNull() {\n\t\t\t\treturn %s\n\t\t\t}\n", null)
		}
		switch f.Kind {
		case kString:
			if f.Conv != "" {
				fmt.Fprintf(b, "\t\t\tvar s string\n\t\t\ts, err = r.StringField(key)\n\t\t\t%s = %s(s)\n", x, f.Conv)
			} else {
				fmt.Fprintf(b, "\t\t\t%s, err = r.StringField(key)\n", x)
			}
		case kInt, kInt64:
			if f.Kind == kInt64 && f.Conv == "" {
				fmt.Fprintf(b, "\t\t\t%s, err = r.Integer(key)\n", x)
			} else {
				fmt.Fprintf(b, "\t\t\tvar n int64\n\t\t\tn, err = r.Integer(key)\n\t\t\t%s = %s(n)\n", x, pick(f.Conv != "", f.Conv, "int"))
			}
		case kBool:
			if f.Conv != "" {
				fmt.Fprintf(b, "\t\t\tvar c bool\n\t\t\tc, err = r.BoolField(key)\n\t\t\t%s = %s(c)\n", x, f.Conv)
			} else {
				fmt.Fprintf(b, "\t\t\t%s, err = r.BoolField(key)\n", x)
			}
		case kRaw:
			fmt.Fprintf(b, "\t\t\t%s, err = r.Raw()\n", x)
		case kTime:
			fmt.Fprintf(b, "\t\t\t%s, err = jsonwire.TimeField(r, key)\n", x)
		case kTimePtr:
			fmt.Fprintf(b, "\t\t\tvar t time.Time\n\t\t\tt, err = jsonwire.TimeField(r, key)\n\t\t\t%s = &t\n", x)
		case kIntPtr:
			fmt.Fprintf(b, "\t\t\tvar n int64\n\t\t\tn, err = r.Integer(key)\n\t\t\tp := int(n)\n\t\t\t%s = &p\n", x)
		case kInt64Ptr:
			fmt.Fprintf(b, "\t\t\tvar n int64\n\t\t\tn, err = r.Integer(key)\n\t\t\t%s = &n\n", x)
		case kStrings:
			fmt.Fprintf(b, "\t\t\t%s, err = jsonwire.StringArray(r, key)\n", x)
		case kRaws:
			fmt.Fprintf(b, "\t\t\terr = jsonwire.RawArray(r, key, &%s)\n", x)
		case kStruct:
			fmt.Fprintf(b, "\t\t\tif r.KindAt() != \"object\" {\n\t\t\t\treturn %sjsonwire.TypeError(r, key, \"an object\")\n\t\t\t}\n\t\t\terr = %s.decode(r)\n", pick(null == "nil", "", "true, "), x)
		case kStructPtr:
			fmt.Fprintf(b, "\t\t\tif r.KindAt() != \"object\" {\n\t\t\t\treturn %sjsonwire.TypeError(r, key, \"an object\")\n\t\t\t}\n\t\t\t%s = new(%s)\n\t\t\terr = %s.decode(r)\n", pick(null == "nil", "", "true, "), x, f.Elem, x)
		case kStructs:
			fmt.Fprintf(b, "\t\t\terr = jsonwire.ObjectArray(r, key, func() { %s = []%s{} }, func() error {\n\t\t\t\tvar e %s\n\t\t\t\terr := e.decode(r)\n\t\t\t\t%s = append(%s, e)\n\t\t\t\treturn err\n\t\t\t})\n", x, f.Elem, f.Elem, x, x)
		}
	}
}

// tracked lists the types with presence that a value of t contains.
func (p *pkg) tracked(t *Type, seen map[string]bool, out map[string]bool) {
	for _, f := range t.Fields {
		if f.Kind != kStruct && f.Kind != kStructs || seen[f.Elem] {
			continue
		}
		seen[f.Elem] = true
		u := p.types[f.Elem]
		if u.Track {
			out[u.Name] = true
		}
		p.tracked(u, seen, out)
	}
}

func (p *pkg) top(b *bytes.Buffer, t *Type) error {
	if t.Decode == "" {
		return nil
	}
	inner := map[string]bool{}
	p.tracked(t, map[string]bool{t.Name: true}, inner)
	switch {
	case t.Track && len(inner) > 0, len(inner) > 1:
		return fmt.Errorf("apigen: %s: a decoder reports the fields of one type only", t.Name)
	case t.Track:
		fmt.Fprintf(b, "\n// %s decodes a %s strictly.\nfunc %s(b []byte) (%s, error) {\n\tv, _, err := %sFields(b)\n\treturn v, err\n}\n", t.Decode, t.Name, t.Decode, t.Name, t.Decode)
		fmt.Fprintf(b, "\n// %sFields is %s, and says which fields the body set.\nfunc %sFields(b []byte) (%s, %sFields, error) {\n\tvar v %s\n\tr := jsonwire.NewReader(b)\n\terr := r.Open()\n\tif err == nil {\n\t\terr = r.CloseBody(v.decode(&r))\n\t}\n\tvar f %sFields\n\tif n := len(r.Marks()); n > 0 {\n\t\tf = %sFields(r.Marks()[n-1])\n\t}\n\treturn v, f, err\n}\n",
			t.Decode, t.Decode, t.Decode, t.Name, t.Name, t.Name, t.Name, t.Name)
	case t.Answer:
		fmt.Fprintf(b, "\n// %s decodes a %s as encoding/json would (unknown fields are skipped).\nfunc %s(b []byte) (%s, error) {\n\tvar v %s\n\tr := jsonwire.NewAnswerReader(b)\n\terr := r.Open()\n\tif err == nil {\n\t\terr = r.CloseBody(v.decode(&r))\n\t}\n\treturn v, err\n}\n", t.Decode, t.Name, t.Decode, t.Name, t.Name)
	default:
		fmt.Fprintf(b, "\n// %s decodes a %s strictly.\nfunc %s(b []byte) (%s, error) {\n\tvar v %s\n\tr := jsonwire.NewReader(b)\n\terr := r.Open()\n\tif err == nil {\n\t\terr = r.CloseBody(v.decode(&r))\n\t}\n\treturn v, err\n}\n", t.Decode, t.Name, t.Decode, t.Name, t.Name)
		for u := range inner {
			fmt.Fprintf(b, "\n// %sFields is %s, and says which fields each\n// %s of the body set, in the order of the body.\nfunc %sFields(b []byte) (%s, []%sFields, error) {\n\tvar v %s\n\tr := jsonwire.NewReader(b)\n\terr := r.Open()\n\tif err == nil {\n\t\terr = r.CloseBody(v.decode(&r))\n\t}\n\tfs := make([]%sFields, len(r.Marks()))\n\tfor i, m := range r.Marks() {\n\t\tfs[i] = %sFields(m)\n\t}\n\treturn v, fs, err\n}\n",
				t.Decode, t.Decode, u, t.Decode, t.Name, u, t.Name, u, u)
		}
	}
	return nil
}
