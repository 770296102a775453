// Package push decides when a tenant asks executors to run its ready work
// (docs/DESIGN.md, "Why push"). It is pure: time comes in as values, ids
// from a counter; the runtime counts what is ready and persists nothing
// here. A tracker lost with its instance costs at most one extra push: the
// alarm, set at the earliest expiry or retry, makes a fresh instance look
// again.
package push
