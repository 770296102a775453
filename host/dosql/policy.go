package dosql

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ncruces/go-sqlite3"

	"github.com/stile-run/stile/do"
)

// Messages workerd gives, verbatim (measured: e2e/dosqlite/measured.json).
const (
	msgTransaction = "To execute a transaction, please use the state.storage.transaction() or " +
		"state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT statements. " +
		"The JavaScript API is safer because it will automatically roll back on exceptions, and because it " +
		"interacts correctly with Durable Objects' automatic atomic write coalescing."
	msgNoStatement      = "SQL code did not contain a statement."
	msgMultiParams      = "When executing multiple SQL statements in a single call, only the last statement can have parameters."
	msgStatementTooLong = "statement too long: SQLITE_TOOBIG"
	msgBindings         = "Wrong number of parameter bindings for SQL query."
)

// The PRAGMA allowlist, measured. Names are case-sensitive; any other
// PRAGMA, and any other form of these, is refused with "not authorized".
var (
	// pragmasBare may be read with no argument.
	pragmasBare = setOf("data_version", "foreign_keys", "defer_foreign_keys", "case_sensitive_like",
		"ignore_check_constraints", "legacy_alter_table", "recursive_triggers", "reverse_unordered_selects",
		"foreign_key_check", "quick_check", "optimize", "table_list")
	// pragmasObject take a table or index name (required unless also in
	// pragmasBare); a name starting with _cf is refused.
	pragmasObject = setOf("table_info", "table_xinfo", "index_info", "index_list", "index_xinfo",
		"foreign_key_list", "table_list", "foreign_key_check", "quick_check")
	// pragmasBool may be set; the value must start with a boolean word.
	pragmasBool = setOf("foreign_keys", "defer_foreign_keys", "case_sensitive_like",
		"ignore_check_constraints", "legacy_alter_table", "recursive_triggers", "reverse_unordered_selects")
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// pragmaAllowed decides a PRAGMA the way workerd's authorizer does.
func pragmaAllowed(name, arg string) bool {
	if arg == "" {
		return pragmasBare[name]
	}
	switch {
	case pragmasBool[name]:
		v := strings.ToLower(arg)
		for _, w := range []string{"1", "0", "true", "false", "yes", "no", "on", "off"} {
			if strings.HasPrefix(v, w) {
				return true
			}
		}
		return false
	case pragmasObject[name]:
		return name == "table_list" || !reservedName(arg) || (name == "quick_check" && isInt(arg))
	case name == "optimize":
		n, err := strconv.ParseInt(arg, 0, 64)
		return err == nil && n >= math.MinInt32 && n <= math.MaxUint32>>1
	}
	return false
}

func isInt(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// deniedFunctions are SQL functions Durable Object SQLite refuses by name.
var deniedFunctions = map[string]bool{
	"sqlite_version":            true,
	"sqlite_source_id":          true,
	"sqlite_compileoption_used": true,
	"sqlite_compileoption_get":  true,
}

// authorize is SQLite's authorizer callback: it refuses, at prepare time,
// what workerd refuses, and notes why so sqlError can use workerd's words.
func (db *DB) authorize(action sqlite3.AuthorizerActionCode, a3, a4, schema, inner string) sqlite3.AuthorizerReturnCode {
	if db.host {
		return sqlite3.AUTH_OK
	}
	switch action {
	case sqlite3.AUTH_TRANSACTION, sqlite3.AUTH_SAVEPOINT:
		db.denied = "transaction"
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_ATTACH, sqlite3.AUTH_DETACH:
		db.denied = "auth"
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_PRAGMA:
		if schema != "temp" && pragmaAllowed(a3, a4) {
			return sqlite3.AUTH_OK
		}
		db.denied = "auth"
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_FUNCTION:
		if deniedFunctions[strings.ToLower(a4)] {
			db.denied = "function:" + a4
			return sqlite3.AUTH_DENY
		}
		if absentFunctions[strings.ToLower(a4)] {
			db.denied = "nofunction:" + a4
			return sqlite3.AUTH_DENY
		}
	case sqlite3.AUTH_CREATE_TEMP_TABLE, sqlite3.AUTH_CREATE_TEMP_INDEX, sqlite3.AUTH_CREATE_TEMP_VIEW,
		sqlite3.AUTH_CREATE_TEMP_TRIGGER:
		db.denied = "auth"
		return sqlite3.AUTH_DENY
	case sqlite3.AUTH_CREATE_VTABLE:
		if reservedName(a3) || !virtualModules[strings.ToLower(a4)] {
			db.denied = "auth"
			return sqlite3.AUTH_DENY
		}
	case sqlite3.AUTH_CREATE_TABLE, sqlite3.AUTH_CREATE_INDEX, sqlite3.AUTH_CREATE_VIEW, sqlite3.AUTH_CREATE_TRIGGER:
		if reservedName(a3) || schema == "temp" {
			db.denied = "auth"
			return sqlite3.AUTH_DENY
		}
	case sqlite3.AUTH_ALTER_TABLE:
		if reservedName(a4) {
			db.denied = "auth"
			return sqlite3.AUTH_DENY
		}
	case sqlite3.AUTH_READ, sqlite3.AUTH_UPDATE, sqlite3.AUTH_INSERT, sqlite3.AUTH_DELETE,
		sqlite3.AUTH_DROP_TABLE, sqlite3.AUTH_DROP_INDEX, sqlite3.AUTH_DROP_VIEW, sqlite3.AUTH_DROP_TRIGGER,
		sqlite3.AUTH_DROP_VTABLE:
		if absentTables[strings.ToLower(a3)] {
			db.denied = "notable:" + a3
			return sqlite3.AUTH_DENY
		}
		if reservedName(a3) {
			// SQLite words the refusal itself ("access to t.c is
			// prohibited" for reads, "not authorized" otherwise).
			db.denied = "auth"
			return sqlite3.AUTH_DENY
		}
	}
	return sqlite3.AUTH_OK
}

// reservedName: names starting with _cf_ (any case) belong to Cloudflare.
func reservedName(name string) bool {
	return len(name) >= 4 && strings.EqualFold(name[:4], "_cf_")
}

// virtualModules are the virtual table modules workerd lets a table use;
// others (rtree, fts3, fts4, dbstat) are refused.
var virtualModules = setOf("fts5", "fts5vocab")

// absentFunctions and absentTables exist in the local SQLite build but not
// in workerd's: refused as missing, so code that uses them fails here too.
var (
	absentFunctions = setOf("soundex", "decimal", "decimal_add", "decimal_sub", "decimal_mul",
		"decimal_cmp", "decimal_sum", "decimal_exp", "regexp", "unistr", "unistr_quote")
	absentTables = setOf("generate_series")
)

// sqlError turns a SQLite error into workerd's form:
//
//	<message>[ at offset N]: SQLITE_<CODE>[ (extended: SQLITE_<CODE>_<EXT>)]
//
// sql is the text being prepared, when the error came from preparing it.
func (db *DB) sqlError(err error, sql string) error {
	var se *sqlite3.Error
	if !errors.As(err, &se) {
		var code sqlite3.ErrorCode
		if errors.As(err, &code) {
			return &do.SQLError{Msg: fmt.Sprintf("%s: %s", strings.TrimPrefix(code.Error(), "sqlite3: "), codeName(sqlite3.ExtendedErrorCode(code)))}
		}
		return &do.SQLError{Msg: err.Error()}
	}
	denied := db.denied
	db.denied = ""
	switch {
	case denied == "transaction":
		return &do.SQLError{Msg: msgTransaction}
	case strings.HasPrefix(denied, "function:"):
		return &do.SQLError{Msg: fmt.Sprintf("not authorized to use function: %s%s: SQLITE_ERROR",
			strings.TrimPrefix(denied, "function:"), offset(se, sql))}
	case strings.HasPrefix(denied, "nofunction:"):
		name := strings.TrimPrefix(denied, "nofunction:")
		if s := se.SQL(); len(s) >= len(name) && strings.EqualFold(s[:len(name)], name) {
			name = s[:len(name)] // as written, like SQLite's own message
		}
		return &do.SQLError{Msg: fmt.Sprintf("no such function: %s%s: SQLITE_ERROR", name, offset(se, sql))}
	case strings.HasPrefix(denied, "notable:"):
		return &do.SQLError{Msg: fmt.Sprintf("no such table: %s: SQLITE_ERROR", strings.TrimPrefix(denied, "notable:"))}
	}
	x := se.ExtendedCode()
	msg := strings.TrimPrefix(se.Error(), x.Error()+": ")
	if msg == se.Error() || msg == "" {
		msg = strings.TrimPrefix(x.Error(), "sqlite3: ")
	}
	if m, ok := rewordings[msg]; ok {
		msg = m
	}
	out := msg + offset(se, sql) + ": " + codeName(sqlite3.ExtendedErrorCode(se.Code()))
	if sqlite3.ExtendedErrorCode(se.Code()) != x {
		out += " (extended: " + codeName(x) + ")"
	}
	return &do.SQLError{Msg: out}
}

// rewordings map messages of the local SQLite build to workerd's for the
// same refusal.
var rewordings = map[string]string{
	"triggers nested too deep": "too many levels of trigger recursion",
}

func offset(se *sqlite3.Error, sql string) string {
	if sql == "" || se.SQL() == "" || len(se.SQL()) > len(sql) {
		return ""
	}
	return fmt.Sprintf(" at offset %d", len(sql)-len(se.SQL()))
}

var primaryNames = map[sqlite3.ErrorCode]string{
	sqlite3.ERROR: "SQLITE_ERROR", sqlite3.INTERNAL: "SQLITE_INTERNAL", sqlite3.PERM: "SQLITE_PERM",
	sqlite3.ABORT: "SQLITE_ABORT", sqlite3.BUSY: "SQLITE_BUSY", sqlite3.LOCKED: "SQLITE_LOCKED",
	sqlite3.NOMEM: "SQLITE_NOMEM", sqlite3.READONLY: "SQLITE_READONLY", sqlite3.INTERRUPT: "SQLITE_INTERRUPT",
	sqlite3.IOERR: "SQLITE_IOERR", sqlite3.CORRUPT: "SQLITE_CORRUPT", sqlite3.NOTFOUND: "SQLITE_NOTFOUND",
	sqlite3.FULL: "SQLITE_FULL", sqlite3.CANTOPEN: "SQLITE_CANTOPEN", sqlite3.PROTOCOL: "SQLITE_PROTOCOL",
	sqlite3.EMPTY: "SQLITE_EMPTY", sqlite3.SCHEMA: "SQLITE_SCHEMA", sqlite3.TOOBIG: "SQLITE_TOOBIG",
	sqlite3.CONSTRAINT: "SQLITE_CONSTRAINT", sqlite3.MISMATCH: "SQLITE_MISMATCH", sqlite3.MISUSE: "SQLITE_MISUSE",
	sqlite3.NOLFS: "SQLITE_NOLFS", sqlite3.AUTH: "SQLITE_AUTH", sqlite3.FORMAT: "SQLITE_FORMAT",
	sqlite3.RANGE: "SQLITE_RANGE", sqlite3.NOTADB: "SQLITE_NOTADB",
}

var extendedNames = map[sqlite3.ExtendedErrorCode]string{
	sqlite3.CONSTRAINT_CHECK:      "SQLITE_CONSTRAINT_CHECK",
	sqlite3.CONSTRAINT_COMMITHOOK: "SQLITE_CONSTRAINT_COMMITHOOK",
	sqlite3.CONSTRAINT_FOREIGNKEY: "SQLITE_CONSTRAINT_FOREIGNKEY",
	sqlite3.CONSTRAINT_FUNCTION:   "SQLITE_CONSTRAINT_FUNCTION",
	sqlite3.CONSTRAINT_NOTNULL:    "SQLITE_CONSTRAINT_NOTNULL",
	sqlite3.CONSTRAINT_PRIMARYKEY: "SQLITE_CONSTRAINT_PRIMARYKEY",
	sqlite3.CONSTRAINT_TRIGGER:    "SQLITE_CONSTRAINT_TRIGGER",
	sqlite3.CONSTRAINT_UNIQUE:     "SQLITE_CONSTRAINT_UNIQUE",
	sqlite3.CONSTRAINT_VTAB:       "SQLITE_CONSTRAINT_VTAB",
	sqlite3.CONSTRAINT_ROWID:      "SQLITE_CONSTRAINT_ROWID",
	sqlite3.CONSTRAINT_PINNED:     "SQLITE_CONSTRAINT_PINNED",
	sqlite3.CONSTRAINT_DATATYPE:   "SQLITE_CONSTRAINT_DATATYPE",
}

func codeName(x sqlite3.ExtendedErrorCode) string {
	if n, ok := extendedNames[x]; ok {
		return n
	}
	if n, ok := primaryNames[sqlite3.ErrorCode(x)]; ok {
		return n
	}
	return fmt.Sprintf("SQLITE_%d", uint16(x))
}

// renamesToReserved reports whether sql renames a table to a _cf_ name,
// which workerd refuses. SQLite's authorizer is not told the new name, so
// this looks at the words of the statement.
func renamesToReserved(sql string) bool {
	f := strings.Fields(strings.ToUpper(sql))
	for i := 0; i+2 < len(f); i++ {
		if f[i] == "RENAME" && f[i+1] == "TO" {
			return reservedName(strings.Trim(f[i+2], "\"'`[];"))
		}
	}
	return false
}
