// Command guest is the host ABI's contract guest as a wasip1 reactor
// module: package contract's Guest behind the entry every tenant module
// exports. The contract suite builds it; nothing ships it.
package main

func main() {}
