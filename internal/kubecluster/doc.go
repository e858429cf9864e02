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
// Stop kills what Start started, by PID, and checks nothing is left: no
// process of the cluster's folder, no listener on its ports, no folder.
//
//	c, err := kubecluster.Start(ctx, &kubecluster.Options{Nodes: 2})
//	if errors.Is(err, kubecluster.ErrNoBinaries) { t.Skip(err) }
//	defer c.Stop()
//	cs := kubernetes.NewForConfigOrDie(c.REST(c.AdminToken))
package kubecluster
