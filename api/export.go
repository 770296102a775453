package api

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/stile-run/stile/internal/jsonwire"
	"github.com/stile-run/stile/internal/printf"
)

// ExportFormat names the format of export pages; an import refuses
// another.
const ExportFormat = "stile-export/1"

// ExportPage is one page of a tenant's export (GET /export): rows of its
// tables, Stile's and the module's, read in one transaction. Pass Next as
// ?cursor= for the following page; the last page has none. Every page of
// one export carries the same Mark: events and jobs after it are left out,
// and checkpoints past it are set back to it. POST /import takes the
// pages, in order, into an empty tenant.
//
//stile:json DecodeExportPage
type ExportPage struct {
	Format string     `json:"format"`
	Tenant string     `json:"tenant"`
	Mark   ExportMark `json:"mark"`
	// StileSchema and ModuleSchema are the versions of the tables: an
	// import needs a module at the same versions.
	StileSchema  int64         `json:"stile_schema"`
	ModuleSchema int64         `json:"module_schema"`
	First        bool          `json:"first,omitempty"`
	Tables       []ExportTable `json:"tables"`
	Next         string        `json:"next,omitempty"`
}

// ExportMark bounds an export: the last event and the last job it holds,
// and when it began.
type ExportMark struct {
	EventSeq int64     `json:"event_seq"`
	JobID    int64     `json:"job_id"`
	At       time.Time `json:"at"`
}

// ExportTable is a run of one table's rows. First says the run starts at
// the table's beginning (an import clears what the table held). Rows is
// an array of rows, each an array of cells in the order of Columns
// (AppendCells, DecodeRows).
type ExportTable struct {
	Name    string          `json:"name"`
	Columns []string        `json:"columns"`
	First   bool            `json:"first,omitempty"`
	Rows    json.RawMessage `json:"rows"`
}

// ImportResult answers POST /import: the rows it wrote, and whether the
// import is complete (the page had no Next).
type ImportResult struct {
	Rows int  `json:"rows"`
	Done bool `json:"done"`
}

// ImportAborted answers DELETE /import: the tables the import had written
// to, now empty again.
type ImportAborted struct {
	Tenant string   `json:"tenant"`
	Tables []string `json:"tables"`
}

// CellKind is the type of a cell of an export row.
type CellKind byte

// The cell kinds: SQLite's storage classes.
const (
	CellNull CellKind = iota
	CellInt
	CellReal
	CellText
	CellBlob
)

// Cell is one value of an export row. In JSON: null, an integer, a string
// (text that is valid UTF-8), {"real": "1.5"}, {"blob": "<base64>"} or,
// for text that is not UTF-8, {"text": "<base64>"} (AppendCells,
// DecodeCells; not a wire type of its own).
//
//stile:json -
type Cell struct {
	Kind CellKind
	Int  int64
	Real float64
	Text string // a text's, or a blob's bytes
}

// AppendCells writes cells as a JSON array.
func AppendCells(b []byte, cells []Cell) []byte {
	b = append(b, '[')
	for i, c := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		switch c.Kind {
		case CellNull:
			b = append(b, "null"...)
		case CellInt:
			b = strconv.AppendInt(b, c.Int, 10)
		case CellReal:
			b = append(b, `{"real":"`...)
			b = strconv.AppendFloat(b, c.Real, 'g', -1, 64)
			b = append(b, `"}`...)
		case CellText:
			if utf8.ValidString(c.Text) {
				b = jsonwire.AppendString(b, c.Text)
			} else {
				b = append(b, `{"text":"`...)
				b = base64.StdEncoding.AppendEncode(b, []byte(c.Text))
				b = append(b, `"}`...)
			}
		case CellBlob:
			b = append(b, `{"blob":"`...)
			b = base64.StdEncoding.AppendEncode(b, []byte(c.Text))
			b = append(b, `"}`...)
		}
	}
	return append(b, ']')
}

// DecodeRows reads an ExportTable's rows, each of width cells (any
// width, if negative).
func DecodeRows(b []byte, width int) ([][]Cell, error) {
	var rows [][]Cell
	err := jsonwire.DecodeBody(b, func(r *jsonwire.Reader) error {
		return jsonwire.DecodeArray(r, func(i int) error {
			var cells []Cell
			err := jsonwire.DecodeArray(r, func(int) error {
				c, err := decodeCell(r)
				cells = append(cells, c)
				return err
			})
			if err == nil && width >= 0 && len(cells) != width {
				err = &jsonwire.DecodeError{Msg: printf.Sprintf("row %d has %d cells, and the table's columns are %d", i, len(cells), width)}
			}
			rows = append(rows, cells)
			return err
		})
	})
	return rows, err
}

func decodeCell(r *jsonwire.Reader) (Cell, error) {
	switch r.KindAt() {
	case "null":
		r.IsNull()
		return Cell{Kind: CellNull}, nil
	case "string":
		s, err := r.Str()
		return Cell{Kind: CellText, Text: s}, err
	case "number":
		text, err := r.Number()
		if err != nil {
			return Cell{}, err
		}
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return Cell{}, &jsonwire.DecodeError{Msg: printf.Sprintf("a cell must be a whole number, not %s: write reals as {\"real\": \"%s\"}", text, text)}
		}
		return Cell{Kind: CellInt, Int: n}, nil
	case "object":
		var c Cell
		seen := 0
		err := jsonwire.DecodeObject(r, func(key string) error {
			seen++
			s, err := r.Str()
			if err != nil {
				return err
			}
			switch key {
			case "real":
				c.Kind = CellReal
				c.Real, err = strconv.ParseFloat(s, 64)
				if err != nil {
					return &jsonwire.DecodeError{Msg: printf.Sprintf("cell {\"real\": %q} is not a number", s)}
				}
			case "blob", "text":
				c.Kind = CellBlob
				if key == "text" {
					c.Kind = CellText
				}
				v, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return &jsonwire.DecodeError{Msg: printf.Sprintf("cell {%q: …} is not base64: %v", key, err)}
				}
				c.Text = string(v)
			default:
				return &jsonwire.DecodeError{Msg: printf.Sprintf("unknown cell {%q: …}: use real, blob or text", key)}
			}
			return nil
		})
		if err == nil && seen != 1 {
			err = &jsonwire.DecodeError{Msg: "a cell object has one member: real, blob or text"}
		}
		return c, err
	}
	return Cell{}, &jsonwire.DecodeError{Msg: "a cell is null, a whole number, a string or an object, not " + r.KindAt()}
}
