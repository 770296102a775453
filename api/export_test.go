package api_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stile-run/stile/api"
	"github.com/stile-run/stile/internal/jsonwire"
)

// Every SQLite storage class survives an export row exactly: reals as
// text, blobs and non-UTF-8 text as base64.
func TestCellsRoundTrip(t *testing.T) {
	row := []api.Cell{{Kind: api.CellNull}, {Kind: api.CellInt, Int: -1 << 53}, {Kind: api.CellInt, Int: 1<<53 - 1},
		{Kind: api.CellReal, Real: 0.1}, {Kind: api.CellReal, Real: math.MaxFloat64}, {Kind: api.CellReal, Real: -0.5},
		{Kind: api.CellText, Text: `é "quoted" \ ✓` + "\n\u2028"}, {Kind: api.CellText, Text: "\xff\xfe not utf-8"},
		{Kind: api.CellBlob, Text: "\x00\x01\x02"}, {Kind: api.CellText, Text: ""}}
	b := api.AppendCells(nil, row)
	require.True(t, jsonwire.Valid(b), string(b))
	got, err := api.DecodeRows(append(append([]byte("["), b...), ']'), len(row))
	require.NoError(t, err)
	require.Equal(t, [][]api.Cell{row}, got)
}

func TestCellsRefuseWhatTheyCannotRead(t *testing.T) {
	for body, msg := range map[string]string{
		`[[1.5]]`:             `write reals as {"real": "1.5"}`,
		`[[true]]`:            "a cell is null, a whole number, a string or an object",
		`[[{"real":"x"}]]`:    `cell {"real": "x"} is not a number`,
		`[[{"blob":"!!"}]]`:   "is not base64",
		`[[{"date":"2026"}]]`: "unknown cell",
		`[[{}]]`:              "a cell object has one member",
		`[[1,2],[3]]`:         "row 1 has 1 cells, and the table's columns are 2",
		`[[1,2]] trailing`:    "unexpected data",
	} {
		_, err := api.DecodeRows([]byte(body), 2)
		require.ErrorContains(t, err, msg, body)
	}
}
