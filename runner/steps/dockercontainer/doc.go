// Package dockercontainer holds the two container steps of coding tasks:
// run_docker_container builds a Dockerfile (from a file_artifact_universe
// or a .zip URL) and starts a container from it next to a VM-mode sandbox,
// and run_container_unit_tests_verifier runs a test command in such a
// container and scores it by its exit code or by a reward file.
//
// With the local provider a VM-mode sandbox is a work folder on this
// machine, so the image is built and the container run on the local
// Docker engine (the runner's "docker" sandbox provider). Nothing is
// pulled: a Dockerfile must start FROM scratch or from an image the engine
// already holds.
//
// Everything the steps create (containers, networks, images) carries the
// envdeploy labels under a group id of its own, "<sandbox_id>-containers",
// with the owner process, an expiry and the store label of the run's
// Docker provider: the run's teardown removes the group (it is held as a
// sandbox of the run), and `agent-env sandbox prune` run against the same
// store removes what a killed run left, never another store's. Container and
// network names are scoped by that group id, so two runs on one engine
// never collide; the run context keeps the task's own names.
package dockercontainer
