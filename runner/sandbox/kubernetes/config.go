package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// EndpointMode is how a runner reaches workloads.
type EndpointMode string

const (
	// EndpointCluster hands out the Service's cluster address
	// (http://<service>.<namespace>.svc:<port>): the runner runs in the
	// cluster.
	EndpointCluster EndpointMode = "cluster"
	// EndpointPortForward forwards a loopback port of the runner's machine
	// to the Pod through the API server: the runner runs outside.
	EndpointPortForward EndpointMode = "port-forward"
)

// UnmarshalText accepts the two modes.
func (m *EndpointMode) UnmarshalText(b []byte) error {
	switch EndpointMode(b) {
	case EndpointCluster, EndpointPortForward:
		*m = EndpointMode(b)
		return nil
	}
	return fmt.Errorf("endpoint_mode must be %q or %q, got %q", EndpointCluster, EndpointPortForward, string(b))
}

// Duration is a time.Duration written "30s" or as a number of seconds.
type Duration time.Duration

// UnmarshalJSON accepts "2m", "120s" or 120.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		if n <= 0 {
			return fmt.Errorf("deploy_timeout must be positive, got %v", n)
		}
		*d = Duration(n * float64(time.Second))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("deploy_timeout must be a duration such as \"120s\" or a number of seconds")
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("deploy_timeout must be a positive duration such as \"120s\", got %q", s)
	}
	*d = Duration(v)
	return nil
}

// DefaultDeployTimeout bounds how long Run waits for a Pod to run.
const DefaultDeployTimeout = 120 * time.Second

// Config is [sandbox.providers.kubernetes.config].
type Config struct {
	// Kubeconfig is the kubeconfig file; "" uses $KUBECONFIG, then
	// ~/.kube/config, then the in-cluster service account.
	Kubeconfig string `json:"kubeconfig"`
	// Context is the kubeconfig context; "" is its current context.
	Context string `json:"context"`
	// Namespace holds every object; "" is the context's namespace, then
	// "default". It must exist: the provider never creates namespaces.
	Namespace string `json:"namespace"`
	// EndpointMode is "cluster" (default) or "port-forward".
	EndpointMode EndpointMode `json:"endpoint_mode"`
	// DeployTimeout bounds the wait for a Pod to run (default 120 s).
	DeployTimeout Duration `json:"deploy_timeout"`
	// NetworkPolicyEnforced says the cluster's CNI enforces NetworkPolicy
	// objects. The API server accepts them on any cluster, so the provider
	// cannot tell; without this, allowlist sandboxes are refused rather
	// than run unconfined.
	NetworkPolicyEnforced bool `json:"network_policy_enforced"`
	// Registry is the registry the cluster's nodes pull from, host[:port]
	// ("127.0.0.1:5000"): the store's images are pushed there and Pods
	// name them by digest. "" = the image store's host (the project's
	// registry, `agent-env registry serve`). The push is plain HTTP to a
	// loopback host and https to any other; an "http://" or "https://"
	// prefix says which (e.g. the project's registry on a LAN address,
	// which serves plain HTTP). The prefix is never part of a Pod's image.
	Registry string `json:"registry"`
	// ImagePullSecret names a secret of the secret store holding a docker
	// config JSON ({"auths": {"<registry>": {"auth": "<base64
	// user:password>"}}}). Each group gets it as a
	// kubernetes.io/dockerconfigjson Secret named in its Pods'
	// imagePullSecrets, and pushes to Registry use its credentials for
	// that host. "" = none (anonymous pulls and pushes).
	ImagePullSecret string `json:"image_pull_secret"`
	// HostNetwork runs every Pod in its node's network namespace, for a
	// lone node on the runner's machine without a CNI network. Pods then
	// share the node's ports: a group gives each workload a port of its
	// own through its PortEnv, and its address is 127.0.0.1 (no cluster
	// DNS resolves Service names there).
	HostNetwork bool `json:"host_network"`
}

// DecodeConfig decodes the provider's config table strictly: an unknown
// key or a value of the wrong type is an error naming it.
func DecodeConfig(raw map[string]any) (Config, error) {
	var c Config
	b, err := json.Marshal(raw)
	if err != nil {
		return c, fmt.Errorf("sandbox.providers.kubernetes.config: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("sandbox.providers.kubernetes.config: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := validRegistry(c.Registry); err != nil {
		return c, fmt.Errorf("sandbox.providers.kubernetes.config: %w", err)
	}
	return c.withDefaults(), nil
}

// splitRegistry splits Config.Registry into the push's scheme ("" = by
// host) and the host[:port] that images are named with: the part of an
// image reference before the repository, so no path.
func splitRegistry(r string) (scheme, host string, err error) {
	host = r
	for _, s := range []string{"http", "https"} {
		if rest, ok := strings.CutPrefix(r, s+"://"); ok {
			scheme, host = s, rest
		}
	}
	if r == "" {
		return "", "", nil
	}
	bad := host == "" || strings.Contains(host, "://") || strings.ContainsAny(host, "/@ ")
	if u, perr := url.Parse("//" + host); !bad && (perr != nil || u.Host != host) {
		bad = true
	}
	if bad {
		return "", "", fmt.Errorf("registry %q: want host[:port] as in an image reference, optionally after http:// or https:// (no path)", r)
	}
	return scheme, host, nil
}

func validRegistry(r string) error {
	_, _, err := splitRegistry(r)
	return err
}

func (c Config) withDefaults() Config {
	if c.EndpointMode == "" {
		c.EndpointMode = EndpointCluster
	}
	if c.DeployTimeout <= 0 {
		c.DeployTimeout = Duration(DefaultDeployTimeout)
	}
	return c
}
