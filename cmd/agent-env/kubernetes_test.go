package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
)

// The kubernetes provider the CLI builds pushes the store's images to the
// configured registry, or to the image store's host when none is set.
func TestKubernetesProviderRegistry(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := writeFile(t, filepath.Join(dir, "kubeconfig"), `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`)
	for _, tc := range []struct{ extra, want string }{
		{"", "localhost:5000"},
		{"registry = \"10.0.0.5:5000\"\nimage_pull_secret = \"REGISTRY_AUTH\"\n", "10.0.0.5:5000"},
	} {
		c := newCLI(t)
		cfgPath := writeFile(t, filepath.Join(t.TempDir(), "config.toml"),
			"[sandbox.providers.kubernetes.config]\nkubeconfig = "+strconv.Quote(kubeconfig)+"\n"+tc.extra)
		t.Setenv("AGENT_ENV_CONFIG", cfgPath)
		d := c.deps(newSyncBuffer(), newSyncBuffer())
		cfg, err := d.loadConfig()
		if err != nil {
			t.Fatal(err)
		}
		st, err := d.openStores(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		kp := d.kubernetesProvider(cfg, st)
		st.Close()
		if kp == nil {
			t.Fatalf("%q: no kubernetes provider", tc.extra)
		}
		if kp.Registry() != tc.want {
			t.Errorf("%q: registry %q, want %q", tc.extra, kp.Registry(), tc.want)
		}
		kp.Close()
	}
}
