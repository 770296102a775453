// Command guest is the host ABI's contract guest as a wasip1 reactor
// module: package contract's Guest behind the exports do.Serve owns. The
// contract suite builds it; nothing ships it.
package main

import (
	"github.com/stile-run/stile/do"
	"github.com/stile-run/stile/host/contract"
)

func init() { do.Serve(func(h do.Host) do.Handler { return contract.New(h) }) }

func main() {}
