// Package gobuild builds a custom agent-env with a set of Go plugins
// compiled in, the way xcaddy builds Caddy: a temporary module holds the
// agent-env command's sources plus one generated file that imports every
// plugin package (their init functions call plugin.Register), and `go
// build` links it. The plugin set is recorded in a file (plugins.toml,
// Set) so that the same binary can be built again.
//
// The agentenv module itself comes from a source folder (a replace
// directive): the one given (--agentenv-source, the set's
// agentenv_source, $AGENTENV_SOURCE), else the folder this binary was compiled from
// when it still exists (a `go build` without -trimpath records it), else
// the module cache copy of the released version the binary was built at.
//
//	set, err := gobuild.ReadSet(".agentenv/plugins.toml")
//	err = gobuild.Build(ctx, &gobuild.Request{Plugins: set.Plugins, Output: "/tmp/agent-env.new"})
package gobuild
