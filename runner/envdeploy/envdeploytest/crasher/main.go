// Command crasher is a test fixture: a "server" that exits at once with a
// message, the way a server whose port is taken or whose config is wrong
// does. Deploys using it must fail fast with its log.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "crasher: failing on purpose (address already in use)")
	os.Exit(3)
}
