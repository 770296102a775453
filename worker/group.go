package worker

import (
	"sync"
	"sync/atomic"
)

// runGroup is the work one loop started (handlers of jobs, runs of
// deliveries): Wait waits for all of it, Running counts what still runs,
// and Ended is told whenever a part ends, so that a drain looks for more
// work when its own work ends, not when any slot of the worker frees.
type runGroup struct {
	wg      sync.WaitGroup
	running atomic.Int64
	ended   chan struct{} // capacity 1
}

func newRunGroup() *runGroup { return &runGroup{ended: make(chan struct{}, 1)} }

func (g *runGroup) add() {
	g.running.Add(1)
	g.wg.Add(1)
}

func (g *runGroup) done() {
	g.running.Add(-1)
	select {
	case g.ended <- struct{}{}:
	default:
	}
	g.wg.Done()
}

// Wait waits for everything the group started.
func (g *runGroup) Wait() { g.wg.Wait() }

// Running is how many parts still run.
func (g *runGroup) Running() int64 { return g.running.Load() }
