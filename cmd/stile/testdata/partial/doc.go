// Package partial is a test module whose handler package handles only part
// of what it registers: stile dev --handlers warns about the rest, and
// stile work --handlers runs the part it handles.
package partial

// What the module registers; the handlers handle Greet and Audit.
const (
	Greet     = "greet"
	Forgotten = "forgotten"
	Audit     = "audit"
	Unheard   = "unheard"
	Said      = "said"
)
