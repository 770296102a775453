package runtime

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The due cache lets reports of jobs claimed together (one lease end) go
// without re-reading the earliest time until the last of them, and reads
// again whenever it cannot be sure.
func TestDueCacheCountsTheEarliest(t *testing.T) {
	d := dueCache{known: true} // nothing is due
	for range 3 {
		d.Added(100) // three jobs claimed together
	}
	d.Added(200)
	require.Equal(t, dueCache{at: 100, known: true, n: 3, counted: true}, d)
	d.Removed(200) // a later one: the earliest stays
	d.Removed(100)
	d.Removed(100)
	require.Equal(t, dueCache{at: 100, known: true, n: 1, counted: true}, d)
	d.Removed(100) // the last at 100: what is next is in storage
	require.False(t, d.known)
	d.Added(50) // unknown stays unknown until read
	require.False(t, d.known)

	d = dueCache{at: 100, known: true} // read back with the reactions due then: uncounted
	d.Added(100)
	d.Removed(100)
	require.False(t, d.known, "an uncounted earliest is read again")

	d = dueCache{at: 100, known: true, n: 2, counted: true}
	d.Added(40) // earlier: a new earliest, counted from one
	require.Equal(t, dueCache{at: 40, known: true, n: 1, counted: true}, d)
	d.Removed(30) // earlier than anything known: inconsistent, read again
	require.False(t, d.known)

	d = dueCache{at: 100, known: true, n: 2, counted: true}
	d.Unknown()
	require.False(t, d.known)
}
