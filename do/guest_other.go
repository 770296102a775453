//go:build !wasip1

package do

// serve does nothing natively: no host calls a native program's exports,
// and native hosts are given their handler (host/native's Config).
func serve(func(Host) Handler) {}
