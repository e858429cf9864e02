package kubernetes

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/agentenv/agentenv/registry/ociregistry"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Images. Nodes pull; they cannot load a tarball the way the Docker
// backend does. So a workload whose image belongs to the store
// (registry.ImageStore.Owns) and comes with its saved tarball is pushed to
// the registry the cluster pulls from (Config.Registry, default the image
// store's host) and the Pod names it by manifest digest: a re-put under the
// same tag cannot change what a running group pulls. Anything else (busybox:1,
// an image of another registry) goes into the Pod as written.

// ErrImagePush is a store image that could not be pushed to the
// cluster's registry; the error names the image and the registry.
var ErrImagePush = errors.New("image push failed")

// ErrPullSecret is an image_pull_secret that cannot be used: missing from
// the secret store, or not a docker config JSON. The error names the
// secret, never its value.
var ErrPullSecret = errors.New("image pull secret unusable")

// PushCache remembers the digest refs of the images pushed, so the
// thousands of instances of one env push its image once. Concurrent
// deploys of one image wait for the first one's push; a failed push is
// forgotten. Entries are keyed by target registry, repository, tag and
// image id, so providers with different registries can share one: a
// process that builds a provider per task (an eval) passes the same
// cache to all of them (Options.PushCache). The zero value is ready.
type PushCache struct {
	mu sync.Mutex
	m  map[string]*push
	// count is how many pushes were started, failed ones included.
	count int
}

// Pushes is how many pushes were started through c, failed ones included.
func (c *PushCache) Pushes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

type push struct {
	done chan struct{}
	ref  string // host/repo@sha256:...
	err  error
}

// podImage is the image the Pod of a workload running src names.
func (p *Provider) podImage(ctx context.Context, src envdeploy.Source) (string, error) {
	if p.images == nil || p.registry == "" || src.Tarball == nil || !p.images.Owns(src.Ref) {
		return src.Ref, nil
	}
	// The store's ref is <store host>/<repo>:<tag>; the same repo and tag
	// go to the cluster's registry. A ref already pinned by digest names
	// what the registry holds: it is used as written.
	_, path, _ := strings.Cut(src.Ref, "/")
	if strings.Contains(path, "@") {
		return src.Ref, nil
	}
	if i := strings.LastIndex(path, ":"); i < strings.LastIndex(path, "/") || i < 0 {
		path += ":latest"
	}
	target := p.registry + "/" + path
	key := target + "\x00" + src.ImageID
	c := p.pushes
	for {
		c.mu.Lock()
		e, ok := c.m[key]
		if !ok {
			if c.m == nil {
				c.m = map[string]*push{}
			}
			e = &push{done: make(chan struct{})}
			c.m[key] = e
			c.count++
			c.mu.Unlock()
			e.ref, e.err = p.pushImage(ctx, src, target)
			if e.err != nil {
				// Not cached: the next deploy tries again (the
				// registry may be back).
				c.mu.Lock()
				delete(c.m, key)
				c.mu.Unlock()
			}
			close(e.done)
			return e.ref, e.err
		}
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		// The pusher's own cancellation is not this deploy's failure:
		// push again.
		if e.err != nil && (errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			continue
		}
		return e.ref, e.err
	}
}

// pushImage pushes src's tarball to target and returns the digest ref.
func (p *Provider) pushImage(ctx context.Context, src envdeploy.Source, target string) (string, error) {
	start := time.Now()
	opt := &ociregistry.PushOptions{Scheme: p.pushScheme}
	if p.cfg.ImagePullSecret != "" {
		_, auths, err := p.pullSecretValue(ctx)
		if err != nil {
			return "", err
		}
		opt.Username, opt.Password = auths.credentials(p.registry)
	}
	open := func() (io.ReadCloser, error) { return src.Tarball(ctx) }
	digest, err := ociregistry.PushTarball(ctx, open, target, opt)
	if err != nil {
		what := src.Ref
		if src.What != "" {
			what += " of " + src.What
		}
		return "", fmt.Errorf("kubernetes: %w: image %s to registry %s: %w", ErrImagePush, what, p.registry, err)
	}
	// target is host[:port]/repo:tag: the tag is after the last colon.
	ref := target[:strings.LastIndex(target, ":")] + "@" + digest
	p.log.Info("image pushed", "image", src.Ref, "registry", p.registry, "ref", ref, "took", time.Since(start))
	return ref, nil
}

// dockerConfig is the part of a docker config JSON (~/.docker/config.json,
// the .dockerconfigjson of a Kubernetes Secret) the provider reads.
type dockerConfig struct {
	Auths map[string]dockerAuth `json:"auths"`
}

type dockerAuth struct {
	Auth     string `json:"auth"` // base64 of user:password
	Username string `json:"username"`
	Password string `json:"password"`
}

// credentials are the user and password dc holds for host ("" when it
// has none). Keys may be written as URLs ("https://host/v1/").
func (dc dockerConfig) credentials(host string) (user, pass string) {
	for k, a := range dc.Auths {
		k = strings.TrimPrefix(strings.TrimPrefix(k, "https://"), "http://")
		k, _, _ = strings.Cut(k, "/")
		if k != host {
			continue
		}
		if a.Username != "" {
			return a.Username, a.Password
		}
		if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if u, p, ok := strings.Cut(string(raw), ":"); ok {
				return u, p
			}
		}
	}
	return "", ""
}

// pullSecretValue reads Config.ImagePullSecret from the secret store and
// checks it is a docker config JSON with at least one registry.
func (p *Provider) pullSecretValue(ctx context.Context) (string, dockerConfig, error) {
	name := p.cfg.ImagePullSecret
	var dc dockerConfig
	if p.secrets == nil {
		return "", dc, fmt.Errorf("kubernetes: %w: image_pull_secret %q: no secret store", ErrPullSecret, name)
	}
	v, ok, err := p.secrets.Get(ctx, name)
	if err != nil {
		return "", dc, fmt.Errorf("kubernetes: %w: image_pull_secret %q: %w", ErrPullSecret, name, err)
	}
	if !ok {
		return "", dc, fmt.Errorf("kubernetes: %w: image_pull_secret %q is not in the secret store", ErrPullSecret, name)
	}
	// The decoder's message can quote the value: it is not passed on.
	if json.Unmarshal([]byte(v), &dc) != nil || len(dc.Auths) == 0 {
		return "", dc, fmt.Errorf(`kubernetes: %w: image_pull_secret %q is not a docker config JSON ({"auths": {"<registry>": {"auth": "<base64 user:password>"}}})`, ErrPullSecret, name)
	}
	return v, dc, nil
}

// pullSecretName is the name of group gid's image pull Secret.
func pullSecretName(gid string) string { return objectName(gid, "image-pull") }

// ensurePullSecret creates the group's kubernetes.io/dockerconfigjson
// Secret from Config.ImagePullSecret, once per group (an existing one is
// kept), and returns its name; "" when none is configured. It carries the
// group's labels, so teardown and prune remove it with the rest.
func (g *Group) ensurePullSecret(ctx context.Context) (string, error) {
	p := g.p
	if p.cfg.ImagePullSecret == "" {
		return "", nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	name := pullSecretName(g.id)
	if g.pullSecret {
		return name, nil
	}
	v, _, err := p.pullSecretValue(ctx)
	if err != nil {
		return "", err
	}
	sec := &corev1.Secret{ObjectMeta: meta(name, g.id, "", "", g.labels), Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(v)}}
	if _, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", p.wrap("create secret "+name, err)
	}
	g.pullSecret = true
	return name, nil
}
