package api

import "time"

// Retention is how long a tenant keeps finished work before the alarm
// deletes it, per kind, in milliseconds; 0 keeps it forever. Events are
// the source of truth and are never deleted; nor is live work (unfinished
// jobs, open deliveries, the command of a delivery still open). A finished
// job is kept while a dependent of it is unfinished and until the unique
// window it was enqueued with has passed. docs/OPERATIONS.md explains
// the defaults (DefaultRetention).
//
// As a PUT /retention body, the fields given override the module's policy
// for this tenant; the fields left out follow it.
//
//stile:json DecodeRetention fields
type Retention struct {
	CompletedMs int64 `json:"completed_ms"`
	CancelledMs int64 `json:"cancelled_ms"`
	DeadMs      int64 `json:"dead_ms"`
	// DeliveriesMs keeps a reaction's settled deliveries (the checkpoint
	// is past them: they are history).
	DeliveriesMs int64 `json:"deliveries_ms"`
	// CommandsMs is the command ledger's window, and so the idempotency
	// horizon of command ids: a command id seen within it is a duplicate;
	// after it, a new command. Scheduled commands that fired go with it.
	CommandsMs int64 `json:"commands_ms"`
	AuditMs    int64 `json:"audit_ms"`
}

// Retention bounds.
const (
	MinRetention = time.Minute
	MaxRetention = 10 * 366 * 24 * time.Hour
)

// DefaultRetention is the policy of a module that sets none: a completed
// job for a day, as River keeps them (its output has been read by then, or
// never will be); a cancelled or dead job a week (someone has to look at
// it, perhaps after a weekend); a settled delivery a day; the command
// ledger a week (retries of a command for longer than that are not
// duplicates); the audit list 90 days.
var DefaultRetention = Retention{
	CompletedMs:  (24 * time.Hour).Milliseconds(),
	CancelledMs:  (7 * 24 * time.Hour).Milliseconds(),
	DeadMs:       (7 * 24 * time.Hour).Milliseconds(),
	DeliveriesMs: (24 * time.Hour).Milliseconds(),
	CommandsMs:   (7 * 24 * time.Hour).Milliseconds(),
	AuditMs:      (90 * 24 * time.Hour).Milliseconds(),
}

// RetentionNames names Retention's fields, in order, as the JSON does.
var RetentionNames = []string{"completed_ms", "cancelled_ms", "dead_ms", "deliveries_ms", "commands_ms", "audit_ms"}

// Values lists r's windows in the order of RetentionNames.
func (r *Retention) Values() []*int64 {
	return []*int64{&r.CompletedMs, &r.CancelledMs, &r.DeadMs, &r.DeliveriesMs, &r.CommandsMs, &r.AuditMs}
}

// Check refuses a window out of bounds, naming it.
func (r Retention) Check() *Error {
	for i, v := range r.Values() {
		if *v != 0 && (*v < MinRetention.Milliseconds() || *v > MaxRetention.Milliseconds()) {
			return Refuse(CodeInvalidRequest, "%s %d must be 0 (keep forever) or within %d-%d", RetentionNames[i], *v, MinRetention.Milliseconds(), MaxRetention.Milliseconds())
		}
	}
	return nil
}

// RetentionResponse is a tenant's retention (GET and PUT /retention): the
// windows in force, the module's, and which fields the tenant overrides.
type RetentionResponse struct {
	Effective  Retention `json:"effective"`
	Module     Retention `json:"module"`
	Overridden []string  `json:"overridden"`
	// NextPurgeAt is when the alarm next looks for rows to delete.
	NextPurgeAt *time.Time `json:"next_purge_at,omitempty"`
}

// StorageKind counts one kind of row (GET /storage).
type StorageKind struct {
	Kind  string `json:"kind"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// StorageResponse is what a tenant stores (GET /storage): rows and
// estimated bytes per kind, from counters kept on every write, and the
// database's size as the platform measures it (indexes, projections' and
// the module's own tables included; 0 when the host does not say).
type StorageResponse struct {
	Kinds         []StorageKind `json:"kinds"`
	CountedBytes  int64         `json:"counted_bytes"`
	DatabaseBytes int64         `json:"database_bytes"`
	LimitBytes    int64         `json:"limit_bytes"`
	WarnBytes     int64         `json:"warn_bytes"`
	// Warning says the database passed WarnBytes, and what to do.
	Warning   string    `json:"warning,omitempty"`
	Retention Retention `json:"retention"`
}

// StorageLimit is a Durable Object's storage limit (10 GB), and
// DefaultStorageWarning the size GET /storage warns at.
const (
	StorageLimit          = 10_000_000_000
	DefaultStorageWarning = 8_000_000_000
)
