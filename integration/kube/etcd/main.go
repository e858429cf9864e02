// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 so the
// Kubernetes integration tests get a static binary without downloading a release.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
