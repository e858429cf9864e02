package kubeclustertest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/agentenv/agentenv/internal/kubecluster"
)

// RealNode starts a cluster with Options.Kubelet set (opts may be nil;
// StartTimeout defaults to 4 minutes, since the first start pulls the
// pause image into a fresh containerd) and registers its Stop with t.
func RealNode(t testing.TB, opts *kubecluster.Options) *kubecluster.Cluster {
	t.Helper()
	if os.Getenv(kubecluster.EnvBin) == "" {
		t.Skipf("tier 2 Kubernetes tests need %s: run integration/kube/build.sh apiserver etcd kwok kubelet and export the folder it prints", kubecluster.EnvBin)
	}
	o := kubecluster.Options{}
	if opts != nil {
		o = *opts
	}
	o.Kubelet = true
	if o.StartTimeout == 0 {
		o.StartTimeout = 4 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.StartTimeout+time.Minute)
	defer cancel()
	c, err := kubecluster.Start(ctx, &o)
	switch {
	case errors.Is(err, kubecluster.ErrNoBinaries), errors.Is(err, kubecluster.ErrNoContainerd):
		t.Skipf("real node: %v", err)
	case err != nil:
		t.Fatalf("start a cluster with a real node: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the cluster: %v", err)
		}
	})
	return c
}
