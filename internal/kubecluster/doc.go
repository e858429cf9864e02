// Package kubecluster starts a throwaway Kubernetes control plane for
// integration tests: etcd, kube-apiserver and kwok (fake nodes that turn
// Pods bound to them Running), all on 127.0.0.1 and free ports, each
// started and stopped by its own PID.
//
// The binaries are built by integration/kube/build.sh, which prints the
// folder to put in AGENTENV_KUBE_BIN. Without it Start returns
// ErrNoBinaries, which tests turn into a skip with its message.
//
// There is no scheduler, controller-manager or kubelet: the cluster binds
// pending Pods to its fake nodes itself (round robin), except Pods whose
// image starts with Options.NoBindImagePrefix, which stay Pending so a test
// can play the kubelet (an image pull failure). The API server uses token
// authentication and RBAC: AdminToken is in system:masters, UserToken
// ("agentenv-user") is granted nothing unless the test binds it a role.
//
// With Options.Kubelet the cluster has one real node (NodeName) instead:
// a kubelet (built by integration/kube/build.sh kubelet) on a private
// containerd (Debian's containerd and runc) whose root, state, socket,
// runc state and CNI folders are all under the cluster's folder, so it
// shares nothing with Docker's containerd. Pods are hostNetwork only (no
// CNI) and should set automountServiceAccountToken: false (no
// controller-manager publishes the token's CA). Images come from the
// cluster's in-process OCI registry (Registry, plain HTTP on 127.0.0.1;
// PushImage), which also holds the sandbox ("pause") image, built from
// ./pause. The kubelet runs with failCgroupV1: false (these hosts are
// cgroup v1) and its cgroupRoot (the kubepods tree, every Pod's cgroup) in
// one folder named after the cluster's, and listens on 127.0.0.1 only. One real node
// runs on a host at a time (the kubelet's device socket and the kernel
// tunables it sets are host-wide): Start waits for the other's Stop. Start returns
// ErrNoContainerd where the node cannot run (not root, no containerd).
//
// Stop kills what Start started, by PID, and checks nothing is left: no
// process of the cluster's folder, no listener on its ports, no folder.
// For the real node it stops the kubelet, then removes every task and
// container through containerd (runc kill/delete under the node's runc
// root for any left), kills leftover shims by PID, stops containerd, then
// unmounts what is mounted under the folder, removes the Pods' cgroups and
// the kubelet's links in /var/log/containers, and puts back the kernel
// tunables the kubelet changed.
//
//	c, err := kubecluster.Start(ctx, &kubecluster.Options{Nodes: 2})
//	if errors.Is(err, kubecluster.ErrNoBinaries) { t.Skip(err) }
//	defer c.Stop()
//	cs := kubernetes.NewForConfigOrDie(c.REST(c.AdminToken))
package kubecluster
