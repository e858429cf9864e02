package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// TypeName is the provider's sandbox name.
const TypeName = "kubernetes"

// ErrForbidden wraps an API server refusal of a verb (RBAC); the message
// names the account, the verb, the resource and the namespace.
var ErrForbidden = errors.New("forbidden by the cluster")

// ErrNamespaceMissing is a configured namespace that does not exist.
var ErrNamespaceMissing = errors.New("namespace does not exist")

// Options tunes New; nil means defaults.
type Options struct {
	Logger *slog.Logger
	// StoreID labels every object created (agentenv.io/store); "" = none.
	StoreID string
	// REST, when set, is used instead of loading Config.Kubeconfig (tests
	// and programs that already hold a client config).
	REST *rest.Config
	// Images is the image store: a workload whose image it owns (and
	// whose tarball the deploy has) is pushed to Config.Registry, whose
	// default is Images.Host(). nil = every image is used as written.
	Images registry.ImageStore
	// Secrets resolves Config.ImagePullSecret; nil with one configured
	// fails every deploy, naming the secret.
	Secrets registry.SecretStore
	// PushCache is shared by the providers of one process so each image
	// is pushed once; nil = the provider's own.
	PushCache *PushCache
}

// Provider talks to one namespace of one cluster.
type Provider struct {
	cs      k8s.Interface
	rc      *rest.Config
	ns      string
	cfg     Config
	storeID string
	log     *slog.Logger

	images     registry.ImageStore
	secrets    registry.SecretStore
	registry   string // where store images are pushed and pulled from: host[:port]
	pushScheme string // "http", "https" or "" (by host: ociregistry.PushOptions.Scheme)
	pushes     *PushCache

	// forwards holds the stop functions of the port-forwards of each
	// group (endpoint_mode port-forward), closed by Terminate and Close.
	mu       sync.Mutex
	forwards map[string][]func()
}

var (
	_ envdeploy.Backend        = (*Provider)(nil)
	_ envdeploy.AddressPlanner = (*Group)(nil)
	_ envdeploy.ExitWatcher    = (*Group)(nil)
	_ sandbox.Provider         = (*Provider)(nil)
	_ sandbox.Reconnector      = (*Provider)(nil)
	_ sandbox.Sweeper          = (*Provider)(nil)
)

// New returns a provider; it does not contact the cluster (Check does).
func New(cfg Config, o *Options) (*Provider, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	rc, ns := opt.REST, cfg.Namespace
	if rc == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = cfg.Kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
		var err error
		if rc, err = cc.ClientConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes: sandbox.providers.kubernetes.config (kubeconfig %q, context %q): %w", cfg.Kubeconfig, cfg.Context, err)
		}
		if ns == "" {
			ns, _, _ = cc.Namespace()
		}
	} else {
		rc = rest.CopyConfig(rc)
	}
	if ns == "" {
		ns = "default"
	}
	// Thousands of instances at once: client-go's default of 5 requests a
	// second would make the client, not the API server, the bottleneck.
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 100, 200
	}
	rc.UserAgent = "agentenv"
	cs, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if opt.PushCache == nil {
		opt.PushCache = &PushCache{}
	}
	scheme, reg, err := splitRegistry(cfg.Registry)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: sandbox.providers.kubernetes.config: %w", err)
	}
	if reg == "" && opt.Images != nil {
		reg = opt.Images.Host()
	}
	return &Provider{cs: cs, rc: rc, ns: ns, cfg: cfg, storeID: opt.StoreID, log: opt.Logger, forwards: map[string][]func(){},
		images: opt.Images, secrets: opt.Secrets, registry: reg, pushScheme: scheme, pushes: opt.PushCache}, nil
}

// Type implements envdeploy.Backend and sandbox.Provider.
func (p *Provider) Type() string { return TypeName }

// Namespace is the namespace objects are created in.
func (p *Provider) Namespace() string { return p.ns }

// Registry is where the store's images are pushed and pulled from ("" =
// no image store: nothing is pushed).
func (p *Provider) Registry() string { return p.registry }

// Pushes is how many image pushes were started through the provider's
// PushCache (each store image once, unless a push failed).
func (p *Provider) Pushes() int { return p.pushes.Pushes() }

// Clientset is the provider's client (tests inspect objects through it).
func (p *Provider) Clientset() k8s.Interface { return p.cs }

// Close stops every port-forward; it removes nothing.
func (p *Provider) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, stops := range p.forwards {
		for _, stop := range stops {
			stop()
		}
		delete(p.forwards, id)
	}
	return nil
}

// Check reports whether the API server answers and the namespace exists.
// An account that may not read namespaces is checked by listing Pods.
func (p *Provider) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := p.cs.CoreV1().Namespaces().Get(ctx, p.ns, metav1.GetOptions{})
	if apierrors.IsForbidden(err) {
		_, err = p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
	}
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("kubernetes: %w: %q (create it, or set namespace in [sandbox.providers.kubernetes.config])", ErrNamespaceMissing, p.ns)
	}
	return p.wrap("check namespace "+p.ns, err)
}

// wrap names the cause of an API failure: an API server that does not
// answer (envdeploy.ErrEngineUnavailable), a refused verb (ErrForbidden),
// a missing namespace (ErrNamespaceMissing).
func (p *Provider) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	var ne net.Error
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("kubernetes: %s: %w: %v (grant the verb to this account in namespace %s)", what, ErrForbidden, err, p.ns)
	case apierrors.IsNotFound(err) && isNamespaceNotFound(err):
		return fmt.Errorf("kubernetes: %s: %w: %q", what, ErrNamespaceMissing, p.ns)
	case errors.As(err, &ue), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: no Kubernetes API server answers at %s (%s): %v", envdeploy.ErrEngineUnavailable, p.rc.Host, what, err)
	}
	return fmt.Errorf("kubernetes: %s: %w", what, err)
}

// isNamespaceNotFound tells a create refused because its namespace is
// missing from a missing object.
func isNamespaceNotFound(err error) bool {
	var se apierrors.APIStatus
	if !errors.As(err, &se) || se.Status().Details == nil {
		return false
	}
	return se.Status().Details.Kind == "namespaces"
}

// ReachableURL implements envdeploy.Backend. A loopback URL of the
// runner's machine cannot be rewritten into one a Pod reaches (there is no
// host.docker.internal in a cluster), so URLs are passed as they are: a
// model endpoint must be reachable from the cluster.
func (p *Provider) ReachableURL(u string) string { return u }
