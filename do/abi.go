package do

// The host ABI: the names a tenant module imports and exports, and the
// status codes that cross between them. Every host (the Durable Object's JS
// shim, the wazero host, the in-process native host) implements exactly this.
//
// Integers crossing the ABI are i32 or i64. Byte strings cross as
// (pointer, length) pairs into the guest's linear memory. SQL parameters and
// rows cross in the value codec of codec.go; requests and responses in the
// frames of frame.go.
const (
	// ImportModule is the Wasm import module name of the host functions.
	ImportModule = "stile"

	// ImportSQL runs one SQL statement.
	//
	//	sql(sqlPtr, sqlLen, argsPtr, argsLen, outPtr, outCap i32) -> i64
	//
	// args is an encoded parameter list (EncodeParams). A result n >= 0 means
	// success with an n-byte encoded row set; n < 0 means failure with a
	// (-n-1)-byte UTF-8 error message. Either payload is written to
	// out[0:len] when it fits in outCap; otherwise the host keeps it pending
	// and the guest fetches it with ImportTake into a buffer large enough.
	ImportSQL = "sql"

	// ImportTake copies the pending payload of the last ImportSQL or ImportTx
	// call into guest memory at ptr and forgets it.
	//
	//	take(ptr i32)
	ImportTake = "take"

	// ImportTx runs a transaction: the host opens it (a savepoint when one is
	// already open), calls the guest's ExportTxBody(id), then commits when
	// the body returned TxCommit and rolls back otherwise.
	//
	//	tx(id i32) -> i64
	//
	// The result is TxCommitted, TxRolledBack, or a negative failure whose
	// (-n-1)-byte message is pending for ImportTake (a failed commit).
	ImportTx = "tx"

	// ImportNow returns the host's clock in Unix milliseconds. The guest
	// never reads time any other way.
	//
	//	now() -> i64
	ImportNow = "now"

	// ImportLog writes one log line at a level (see Level).
	//
	//	log(level, ptr, len i32)
	ImportLog = "log"

	// ExportBuffer returns a guest buffer of at least n bytes into which the
	// host writes the next request frame. The buffer is reused across calls.
	//
	//	stile_buffer(n i32) -> i32
	ExportBuffer = "stile_buffer"

	// ExportHandle handles the n-byte request frame the host wrote into the
	// buffer and returns the response frame as (ptr << 32 | len). The
	// response stays valid until the next call into the module.
	//
	//	stile_handle(n i32) -> i64
	ExportHandle = "stile_handle"

	// ExportTxBody runs the body of the transaction the guest opened with
	// ImportTx(id). It returns TxCommit or TxRollback.
	//
	//	stile_tx_body(id i32) -> i32
	ExportTxBody = "stile_tx_body"
)

// Transaction status codes.
const (
	TxCommit   = 0 // ExportTxBody: the body succeeded, commit it.
	TxRollback = 1 // ExportTxBody: the body failed, roll it back.

	TxCommitted  = 0 // ImportTx: the transaction committed.
	TxRolledBack = 1 // ImportTx: the body asked for a rollback and got it.
)

// Level is a log level crossing ImportLog.
type Level int32

// Log levels.
const (
	LevelDebug Level = 0
	LevelInfo  Level = 1
	LevelWarn  Level = 2
	LevelError Level = 3
)

// Limits every host enforces, matching Durable Object SQLite.
const (
	MaxBoundParams    = 100       // bound parameters per statement
	MaxStatementBytes = 100_000   // bytes of SQL text per statement
	MaxValueBytes     = 2_000_000 // bytes of one TEXT or BLOB value (and of a row)
	MaxSafeInteger    = 1<<53 - 1 // integers round-trip through JS numbers only up to here
	MinSafeInteger    = -(1<<53 - 1)
)
