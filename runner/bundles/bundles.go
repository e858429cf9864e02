// Package bundles holds the bundles built into the agent-env binary, one
// folder per package: agentenv-framework/hello is the first task a user
// runs (`agent-env run hello`).
package bundles

import (
	"embed"
	"io/fs"
)

//go:embed all:agentenv-framework
var files embed.FS

// FS returns the installed bundles: <package>/<bundle>/...
func FS() fs.FS { return files }
