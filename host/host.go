package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/stile-run/stile/do"
)

// Engine is one tenant's module instance. Calls are serialized by the
// Manager; an engine need not be safe for concurrent use.
type Engine interface {
	// Handle passes a request frame to the module and returns its
	// response frame (a copy the caller may keep). When the module traps,
	// Handle rolls back the open transaction and returns an error wrapping
	// ErrTrapped; the engine must not be used again.
	Handle(ctx context.Context, frame []byte) ([]byte, error)
	// Close releases the engine and its database.
	Close() error
}

// Evictable is an Engine that closes more cheaply when it is expected to
// open again: it may leave work for its next open (a database's
// write-ahead log not yet copied into the file). A Manager calls Evict,
// not Close, for an idle engine it closes to stay within its bounds.
type Evictable interface {
	Evict() error
}

// Sized is an Engine that can say how much memory it holds (its guest's
// linear memory, its database's caches), so a Manager can bound the memory
// of its open engines (Config.MaxMemory).
type Sized interface {
	MemoryBytes() int64
}

// Metered is an Engine that counts the rows its module's statements read
// and wrote since it opened (dosql.DB.Rows), for the tenant's usage.
type Metered interface {
	Rows() (read, written int64)
}

// Factory opens engines.
type Factory interface {
	// Open starts the module of tenant over the SQLite file at path.
	Open(ctx context.Context, tenant, path string, clock Clock) (Engine, error)
	// Close releases what the factory shares between engines.
	Close() error
}

// ErrTrapped reports a module that trapped (a Go panic or a host fault).
// Its transaction was rolled back and its instance discarded; the next
// request gets a fresh one over the same, intact data.
var ErrTrapped = errors.New("tenant module trapped")

// ErrAnswerLost reports a module that trapped outside any transaction
// after a transaction of the call committed: what it wrote stands, and
// only its answer is lost. An engine's error wraps it with ErrTrapped; the
// host answers api.AnswerLost, never "wrote nothing". (A trap after a
// migration that committed, before the request's own transaction, is
// reported so too: reading the state before retrying is then merely
// cautious.)
var ErrAnswerLost = errors.New("after its transaction committed")

// Clock is the time the host gives tenant modules.
type Clock interface {
	// Now is the time in Unix milliseconds.
	Now() int64
	// After returns a channel closed once Now reaches at (Unix ms).
	After(at int64) <-chan struct{}
}

// RealClock is the wall clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() int64 { return time.Now().UnixMilli() }

// After implements Clock.
func (RealClock) After(at int64) <-chan struct{} {
	ch := make(chan struct{})
	d := time.Until(time.UnixMilli(at))
	if d <= 0 {
		close(ch)
		return ch
	}
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// ManualClock is a clock tests move by hand.
type ManualClock struct {
	mu      sync.Mutex
	now     int64
	waiters []manualWaiter
}

type manualWaiter struct {
	at int64
	ch chan struct{}
}

// NewManualClock starts a clock at the Unix ms start.
func NewManualClock(start int64) *ManualClock { return &ManualClock{now: start} }

// Now implements Clock.
func (c *ManualClock) Now() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After implements Clock.
func (c *ManualClock) After(at int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if at <= c.now {
		close(ch)
		return ch
	}
	c.waiters = append(c.waiters, manualWaiter{at: at, ch: ch})
	return ch
}

// Timer is After with a stop: stop forgets the wait (its channel is never
// closed), so Waiting counts only the waits still wanted.
func (c *ManualClock) Timer(at int64) (<-chan struct{}, func()) {
	ch := c.After(at)
	return ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, w := range c.waiters {
			if w.ch == ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				return
			}
		}
	}
}

// Waiting counts the channels After handed out that the clock has not
// reached yet: a test waits for a goroutine to wait on the clock before
// it moves it.
func (c *ManualClock) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// Advance moves the clock forward by d and releases the waiters it passed.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += d.Milliseconds()
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at <= c.now {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// LogLevel maps a module's log level to slog's.
func LogLevel(l do.Level) slog.Level {
	switch l {
	case do.LevelDebug:
		return slog.LevelDebug
	case do.LevelWarn:
		return slog.LevelWarn
	case do.LevelError:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// ModuleVersion is a module's version as GET /status and the directory
// show it: the first 12 hex digits of the SHA-256 of its bytes.
func ModuleVersion(wasm []byte) string {
	sum := sha256.Sum256(wasm)
	return hex.EncodeToString(sum[:6])
}

// Versioned is a Factory that knows the version of the module it runs
// (wazerohost's): the Manager tells each request's module.
type Versioned interface {
	ModuleVersion() string
}
