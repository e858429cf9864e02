package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

func TestDecodeConfig(t *testing.T) {
	c, err := DecodeConfig(map[string]any{"kubeconfig": "/k", "namespace": "ns", "context": "ctx", "endpoint_mode": "port-forward", "deploy_timeout": "30s"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kubeconfig != "/k" || c.Namespace != "ns" || c.Context != "ctx" || c.EndpointMode != EndpointPortForward || time.Duration(c.DeployTimeout) != 30*time.Second {
		t.Errorf("decoded %+v", c)
	}
	if c, _ := DecodeConfig(nil); c.EndpointMode != EndpointCluster || time.Duration(c.DeployTimeout) != DefaultDeployTimeout {
		t.Errorf("defaults %+v", c)
	}
	if c, _ := DecodeConfig(map[string]any{"deploy_timeout": 5}); time.Duration(c.DeployTimeout) != 5*time.Second {
		t.Errorf("seconds: %v", c.DeployTimeout)
	}
	for raw, want := range map[string]map[string]any{
		`unknown field "namspace"`: {"namspace": "x"},
		"endpoint_mode":            {"endpoint_mode": "nodeport"},
		"deploy_timeout":           {"deploy_timeout": "soon"},
		"network_policy_enforced":  {"network_policy_enforced": "yes"},
		"image_pull_secret":        {"image_pull_secret": 3},
		`registry "ftp://r:5000"`:  {"registry": "ftp://r:5000"},
		`registry "r:5000/team"`:   {"registry": "r:5000/team"},
		`registry "http://"`:       {"registry": "http://"},
		`registry "r:port"`:        {"registry": "r:port"},
	} {
		if _, err := DecodeConfig(want); err == nil || !strings.Contains(err.Error(), raw) {
			t.Errorf("%v: error %v, want one naming %s", want, err, raw)
		}
	}
}

func TestDecodeImageConfig(t *testing.T) {
	c, err := DecodeConfig(map[string]any{"registry": "127.0.0.1:5000", "image_pull_secret": "REGISTRY_AUTH"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Registry != "127.0.0.1:5000" || c.ImagePullSecret != "REGISTRY_AUTH" {
		t.Errorf("decoded %+v", c)
	}
	for r, want := range map[string][2]string{
		"registry.example": {"", "registry.example"}, "[::1]:5000": {"", "[::1]:5000"}, "localhost:5000": {"", "localhost:5000"},
		"http://10.0.0.5:5000": {"http", "10.0.0.5:5000"}, "https://127.0.0.1:5000": {"https", "127.0.0.1:5000"},
	} {
		if _, err := DecodeConfig(map[string]any{"registry": r}); err != nil {
			t.Errorf("registry %q: %v", r, err)
		}
		p, err := New(Config{Registry: r}, &Options{REST: restFor("http://127.0.0.1:1")})
		if err != nil {
			t.Fatalf("registry %q: %v", r, err)
		}
		if p.pushScheme != want[0] || p.Registry() != want[1] {
			t.Errorf("registry %q: scheme %q, host %q; want %v", r, p.pushScheme, p.Registry(), want)
		}
	}
	// New checks a Config that did not come through DecodeConfig.
	if _, err := New(Config{Registry: "https://r/v2"}, &Options{REST: restFor("http://127.0.0.1:1")}); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Errorf("New with a path in the registry: %v", err)
	}
}

func TestDockerConfigCredentials(t *testing.T) {
	dc := dockerConfig{Auths: map[string]dockerAuth{
		"r1:5000":                     {Auth: "dTE6cDE="}, // u1:p1
		"https://r2.example/v1/":      {Username: "u2", Password: "p2"},
		"r3":                          {Auth: "not base64"},
		"https://index.docker.io/v1/": {Auth: "dTE6cDE="},
	}}
	for host, want := range map[string]string{"r1:5000": "u1:p1", "r2.example": "u2:p2", "r3": ":", "r4": ":", "r1": ":"} {
		u, p := dc.credentials(host)
		if u+":"+p != want {
			t.Errorf("credentials(%q) = %q:%q, want %s", host, u, p, want)
		}
	}
}

func TestPodPullSecret(t *testing.T) {
	pod := podSpec{name: "p", gid: "g", image: "r/x@sha256:00", pullSecret: "g-image-pull"}.pod()
	if ips := pod.Spec.ImagePullSecrets; len(ips) != 1 || ips[0].Name != "g-image-pull" {
		t.Errorf("imagePullSecrets %+v", ips)
	}
	if pod := (podSpec{name: "p", gid: "g", image: "busybox:1"}).pod(); pod.Spec.ImagePullSecrets != nil {
		t.Errorf("imagePullSecrets without a pull secret: %+v", pod.Spec.ImagePullSecrets)
	}
	if errs := validation.IsDNS1123Subdomain(pullSecretName(strings.Repeat("g", 70))); len(errs) > 0 {
		t.Errorf("pull secret name: %v", errs)
	}
}

func TestNamesAndLabels(t *testing.T) {
	for _, id := range []string{"k8s-1a2b", "Echo_Env.v1", "9lives", strings.Repeat("x", 80)} {
		n := objectName(id, "main")
		if errs := validation.IsDNS1035Label(n); len(errs) > 0 {
			t.Errorf("objectName(%q) = %q: %v", id, n, errs)
		}
		if v := labelValue(id + "/pid:1"); len(validation.IsValidLabelValue(v)) > 0 {
			t.Errorf("labelValue(%q) = %q invalid", id, v)
		}
	}
	if objectName(strings.Repeat("x", 80), "a") == objectName(strings.Repeat("x", 81), "a") {
		t.Error("long ids must not share a name")
	}
	l := envdeploy.OwnerLabels("inst-1", true, time.Unix(2e9, 0))
	l[envdeploy.LabelStore] = "store-a"
	m := meta("n", "g1", "srv", "mcp_server", l)
	for k, want := range map[string]string{LabelStore: "store-a", LabelInstance: "inst-1", LabelKind: "mcp_server", LabelSandbox: "g1", LabelWorkload: "srv"} {
		if m.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, m.Labels[k], want)
		}
	}
	back := envLabels(m)
	if back[envdeploy.LabelOwner] != l[envdeploy.LabelOwner] || back[envdeploy.LabelExpires] != "2000000000" || back[envdeploy.LabelSandbox] != "g1" {
		t.Errorf("annotation labels %v", back)
	}
}

func TestPodSpec(t *testing.T) {
	ps := podSpec{name: "p", gid: "g", workload: "main", kind: "sandbox", image: "img@sha256:00", env: map[string]string{"API_KEY": "s3cret"},
		port: 8080, ttl: 90 * time.Second, cpu: 1.5, memoryMB: 512}
	pod := ps.pod()
	if d := pod.Spec.ActiveDeadlineSeconds; d == nil || *d != 90 {
		t.Errorf("activeDeadlineSeconds %v", d)
	}
	c := pod.Spec.Containers[0]
	if got := c.Resources.Limits.Cpu().MilliValue(); got != 1500 {
		t.Errorf("cpu limit %dm", got)
	}
	if got := c.Resources.Requests.Memory().Value(); got != 512<<20 {
		t.Errorf("memory request %d", got)
	}
	for _, e := range c.Env {
		if e.Value == "s3cret" {
			t.Error("a secret value is in the pod spec")
		}
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "p" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if *pod.Spec.AutomountServiceAccountToken {
		t.Error("the service account token must not be mounted")
	}
	if pod.Spec.HostNetwork {
		t.Error("hostNetwork without Config.HostNetwork")
	}
	ps.hostNetwork = true
	if !ps.pod().Spec.HostNetwork {
		t.Error("hostNetwork not set with Config.HostNetwork")
	}
	if cfg, err := DecodeConfig(map[string]any{"host_network": true}); err != nil || !cfg.HostNetwork {
		t.Errorf("host_network: %+v, %v", cfg, err)
	}
	if svc := ps.service(); svc.Spec.Ports[0].Port != 8080 || svc.Spec.Selector[LabelWorkload] != "main" {
		t.Errorf("service %+v", svc.Spec)
	}
	if (podSpec{}).resources() != nil {
		t.Error("no cpu or memory must leave resources unset")
	}
	if err := validEnvKeys(map[string]string{"BAD KEY": "x"}); err == nil || !strings.Contains(err.Error(), "BAD KEY") {
		t.Errorf("bad env key: %v", err)
	}
}

func TestNetworkPolicy(t *testing.T) {
	g := &Group{id: "g1", labels: map[string]string{}}
	np, err := networkPolicy(context.Background(), g, sandbox.NetworkPolicy{Mode: "allowlist", AllowCIDRs: []string{"10.1.2.3/16"}, AllowHosts: []string{"192.0.2.7:443"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Egress) != 2 || np.Spec.Egress[1].To[0].IPBlock.CIDR != "10.1.0.0/16" || np.Spec.Egress[1].To[1].IPBlock.CIDR != "192.0.2.7/32" {
		t.Errorf("egress %+v", np.Spec.Egress)
	}
	if np.Spec.PodSelector.MatchLabels[LabelSandbox] != "g1" {
		t.Errorf("selector %+v", np.Spec.PodSelector)
	}
	if _, err := networkPolicy(context.Background(), g, sandbox.NetworkPolicy{Mode: "allowlist", AllowHosts: []string{"*.example.com"}}); err == nil || !strings.Contains(err.Error(), "allow_hosts") {
		t.Errorf("wildcard: %v", err)
	}
	if _, err := networkPolicy(context.Background(), g, sandbox.NetworkPolicy{Mode: "allowlist", AllowCIDRs: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "allow_cidrs") {
		t.Errorf("bad cidr: %v", err)
	}
}

func TestPodState(t *testing.T) {
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}}
	}
	if done, failed := podState(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}); !done || failed != "" {
		t.Error("running")
	}
	if _, failed := podState(waiting("ErrImagePull")); failed != "" {
		t.Error("a first pull error is retried, not fatal")
	}
	if _, failed := podState(waiting("ImagePullBackOff")); !strings.HasPrefix(failed, "ImagePullBackOff") {
		t.Errorf("backoff: %q", failed)
	}
	if _, failed := podState(&corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "DeadlineExceeded"}}); !strings.Contains(failed, "DeadlineExceeded") {
		t.Errorf("failed: %q", failed)
	}
}

func TestCreateSandboxRefusals(t *testing.T) {
	p, err := New(Config{}, &Options{REST: restFor("http://127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeVM}); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("vm mode: %v", err)
	}
	_, err = p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: "x", NetworkPolicy: sandbox.NetworkPolicy{Mode: "allowlist", AllowCIDRs: []string{"10.0.0.0/8"}}})
	if err == nil || !strings.Contains(err.Error(), "network_policy_enforced") {
		t.Errorf("allowlist without enforcement: %v", err)
	}
	if p.Capabilities().NetworkPolicy {
		t.Error("NetworkPolicy claimed without network_policy_enforced")
	}
}
