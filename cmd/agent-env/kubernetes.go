package main

import (
	"strings"

	"github.com/agentenv/agentenv/internal/config"
	"github.com/agentenv/agentenv/runner/sandbox/kubernetes"
)

// kubernetesProvider builds the "kubernetes" sandbox provider when the
// config names it ([sandbox.providers.kubernetes] or a default sandbox
// list); nil when it does not. A config that cannot be used (a bad key,
// no kubeconfig) is logged and the provider left out, so a deploy on it
// fails naming the provider as not configured. The store's images are
// pushed to the cluster's registry and its secrets hold the image pull
// secret.
func (d *deps) kubernetesProvider(cfg *config.Config, st *storeSet) *kubernetes.Provider {
	tbl, ok := cfg.Sandbox.Providers[kubernetes.TypeName]
	named := strings.Contains(cfg.Sandbox.Default+","+cfg.Sandbox.AgentDefault, kubernetes.TypeName)
	if !ok && !named {
		return nil
	}
	raw, _ := tbl["config"].(map[string]any)
	kc, err := kubernetes.DecodeConfig(raw)
	if err == nil {
		var p *kubernetes.Provider
		if p, err = kubernetes.New(kc, &kubernetes.Options{Logger: d.logger(), StoreID: st.StoreID(),
			Images: st.Images, Secrets: st.Secrets, PushCache: &d.kubePushes}); err == nil {
			return p
		}
	}
	d.logger().Warn("kubernetes sandbox provider unavailable", "error", err)
	return nil
}
