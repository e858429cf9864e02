// Package docker is the Docker sandbox provider, on the Engine API
// (github.com/moby/moby/client; the engine here speaks API 1.41 and the
// client negotiates down). Nothing is ever pulled: images are loaded from
// the tarballs the put commands saved, or built from a user's FROM scratch
// Dockerfile.
//
// It is two things. As an envdeploy.Backend it runs groups: a group is a
// bridge network agentenv-<id>, a workload is a container
// <id>-<name> with the network alias <name>, only published workloads get a
// host port (127.0.0.1, chosen by the engine), and every container gets
// host.docker.internal mapped to the host gateway so a model endpoint on
// this machine is reachable; files are copied out of a group (an agent's
// container, an env server's, never the gateway's) as out of a container
// sandbox. As a sandbox.Provider it creates
// container-mode sandboxes (one container with a published port) for the
// runner's deploy_sandbox step.
//
// Every container and network carries the envdeploy labels (instance,
// sandbox, store, owner pid and start, persistence, expiry); Terminate
// removes by label, so it is complete and idempotent, and Prune removes
// what a killed process left behind. Create calls run to their end on a
// fresh bounded context even when the caller's is cancelled, so a Ctrl-C
// in flight never leaves an object nobody knows of; a removal another
// caller has in progress counts as done once the object is gone.
package docker
