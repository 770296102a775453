//go:build !unix

package workerd

// lockFile is a no-op where flock is not available: parallel test
// processes on a fresh clone may then race in npm ci; run the first test
// alone there, or `npm ci` by hand.
func lockFile(string) (func(), error) { return func() {}, nil }
