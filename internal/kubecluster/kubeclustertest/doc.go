// Package kubeclustertest starts a cluster with one real node (tier 2 of
// the Kubernetes tests: a kubelet on a private containerd) for one test,
// or skips it saying why: no AGENTENV_KUBE_BIN, no kubelet binary, or no
// containerd and runc on the machine. The cluster is stopped, and checked
// for leftovers, when the test ends.
package kubeclustertest
