package docker

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// TypeName is the provider's sandbox name.
const TypeName = "docker"

// Options tunes New; nil means defaults.
type Options struct {
	// Host is the engine address ("unix:///var/run/docker.sock",
	// "tcp://127.0.0.1:2375"); "" reads DOCKER_HOST and friends.
	Host   string
	Logger *slog.Logger
	// StoreID labels every network and container created (LabelStore)
	// unless the group's labels already carry one; "" = none.
	StoreID string
}

// Provider talks to one engine.
type Provider struct {
	cli     *client.Client
	log     *slog.Logger
	storeID string

	// imageLocks holds one *sync.Mutex per image ref: workloads started
	// together that share an image check (and, when missing, load) it
	// one at a time, so its tarball is loaded once.
	imageLocks sync.Map
}

var _ envdeploy.Backend = (*Provider)(nil)
var _ envdeploy.ImageBuilder = (*Provider)(nil)

// New returns a provider; it does not contact the engine (Check does).
func New(o *Options) (*Provider, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	ops := []client.Opt{client.FromEnv}
	if opt.Host != "" {
		ops = append(ops, client.WithHost(opt.Host))
	}
	cli, err := client.New(ops...)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	return &Provider{cli: cli, log: opt.Logger, storeID: opt.StoreID}, nil
}

// Client is the engine client (tests inspect labels through it).
func (p *Provider) Client() *client.Client { return p.cli }

// StoreID is the store id the provider labels what it creates with ("" =
// none); steps that create engine objects of their own label them alike.
func (p *Provider) StoreID() string { return p.storeID }

// Type implements envdeploy.Backend.
func (p *Provider) Type() string { return TypeName }

// Close implements envdeploy.Backend.
func (p *Provider) Close() error { return p.cli.Close() }

// Check pings the engine; a failure wraps envdeploy.ErrEngineUnavailable and
// names the engine address.
func (p *Provider) Check(ctx context.Context) error {
	if _, err := p.cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return p.unavailable(err)
	}
	return nil
}

func (p *Provider) unavailable(err error) error {
	return fmt.Errorf("%w: no Docker engine answers at %s (start Docker, set DOCKER_HOST, or use --sandbox process): %v",
		envdeploy.ErrEngineUnavailable, p.cli.DaemonHost(), err)
}

// wrap turns a connection failure into ErrEngineUnavailable. A transport
// error (the connection dropped mid-request: an engine that went away) is
// checked with a short ping; when that fails too, it is reported as the
// engine being unavailable rather than as an EOF.
func (p *Provider) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if client.IsErrConnectionFailed(err) {
		return p.unavailable(err)
	}
	var ue *url.Error
	var ne net.Error
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, perr := p.cli.Ping(ctx, client.PingOptions{}); perr != nil {
			return fmt.Errorf("%w: the Docker engine at %s went away during %s: %v", envdeploy.ErrEngineUnavailable, p.cli.DaemonHost(), what, err)
		}
	}
	return fmt.Errorf("docker: %s: %w", what, err)
}

// ReachableURL rewrites a loopback host to host.docker.internal, which
// every container maps to the host gateway.
func (p *Provider) ReachableURL(u string) string { return RewriteLoopback(u) }

// RewriteLoopback replaces a loopback host (localhost, 127.x, ::1,
// 0.0.0.0) of u with host.docker.internal.
func RewriteLoopback(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return u
	}
	h := pu.Hostname()
	ip, perr := netip.ParseAddr(h)
	if h != "localhost" && (perr != nil || !(ip.IsLoopback() || ip.IsUnspecified())) {
		return u
	}
	if port := pu.Port(); port != "" {
		pu.Host = "host.docker.internal:" + port
	} else {
		pu.Host = "host.docker.internal"
	}
	return pu.String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HasImage implements envdeploy.ImageBuilder.
func (p *Provider) HasImage(ctx context.Context, ref string) (bool, error) {
	_, err := p.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	return false, p.wrap("inspect image "+ref, err)
}

// LoadImage implements envdeploy.ImageBuilder; gzip is detected.
func (p *Provider) LoadImage(ctx context.Context, r io.Reader) error {
	br := bufio.NewReader(r)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("docker: load image: %w", err)
		}
		defer zr.Close()
		in = zr
	}
	res, err := p.cli.ImageLoad(ctx, in, client.ImageLoadWithQuiet(true))
	if err != nil {
		return p.wrap("load image", err)
	}
	defer res.Close()
	return jsonStreamError(res, nil)
}

// SaveImage implements envdeploy.ImageBuilder.
func (p *Provider) SaveImage(ctx context.Context, ref string) (io.ReadCloser, error) {
	rc, err := p.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, p.wrap("save image "+ref, err)
	}
	return rc, nil
}

// BuildError is a failed image build with the tail of its log.
type BuildError struct {
	Ref string
	Msg string
	Log string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("image build of %s failed: %s\nbuild log (tail):\n%s", e.Ref, e.Msg, e.Log)
}

// BuildImage implements envdeploy.ImageBuilder with the classic builder;
// it never pulls a parent.
func (p *Provider) BuildImage(ctx context.Context, contextTar io.Reader, dockerfile, ref string, labels map[string]string) error {
	all := map[string]string{"agentenv.built": "true"}
	maps.Copy(all, labels)
	res, err := p.cli.ImageBuild(ctx, contextTar, client.ImageBuildOptions{
		Tags: []string{ref}, Dockerfile: dockerfile, Remove: true, ForceRemove: true, Labels: all,
	})
	if err != nil {
		return p.wrap("build image "+ref, err)
	}
	defer res.Body.Close()
	var log bytes.Buffer
	if err := jsonStreamError(res.Body, &log); err != nil {
		return &BuildError{Ref: ref, Msg: err.Error(), Log: tail(log.String(), 20)}
	}
	return nil
}

// jsonStreamError reads an engine JSON message stream and returns its
// error message, copying "stream" text to log.
func jsonStreamError(r io.Reader, log *bytes.Buffer) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading the engine's answer: %w", err)
		}
		if log != nil {
			log.WriteString(m.Stream)
		}
		if m.Error != "" {
			if log != nil {
				log.WriteString(m.Error + "\n")
			}
			return errors.New(strings.TrimSpace(m.Error))
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ensureImage makes src.Ref present, loading its tarball when needed: an
// image already in the engine under src.Ref with src.ImageID (or any, when
// the id is unknown) is used as is, without reading the tarball.
func (p *Provider) ensureImage(ctx context.Context, src envdeploy.Source) error {
	if src.Ref == "" {
		return fmt.Errorf("%w: %s has no image (register it with %s)", envdeploy.ErrImageMissing, src.What, src.PutHint)
	}
	mu, _ := p.imageLocks.LoadOrStore(src.Ref, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	ins, err := p.cli.ImageInspect(ctx, src.Ref)
	stale := ""
	switch {
	case err == nil && (src.ImageID == "" || ins.ID == src.ImageID):
		return nil
	case err == nil:
		// Another image under the same tag: load ours over it. Remove the
		// one it replaces only if it is this store's own (an older build):
		// another store's image is never removed.
		if src.StoreID != "" && ins.Config != nil && ins.Config.Labels[registry.StoreLabel] == src.StoreID {
			stale = ins.ID
		}
	case !cerrdefs.IsNotFound(err):
		return p.wrap("inspect image "+src.Ref, err)
	}
	loaded := false
	if stale != "" {
		// A successful load moves the tag; the stale image is then
		// untagged. Remove it unless something still uses it (not forced).
		defer func() {
			if loaded {
				_, _ = p.cli.ImageRemove(context.WithoutCancel(ctx), stale, client.ImageRemoveOptions{})
			}
		}()
	}
	if src.Tarball == nil {
		return fmt.Errorf("%w: image %s of %s is not in the engine and has no saved tarball (re-run %s)",
			envdeploy.ErrImageMissing, src.Ref, src.What, src.PutHint)
	}
	start := time.Now()
	rc, err := src.Tarball(ctx)
	if err != nil {
		return fmt.Errorf("%w: image %s of %s: %v (re-run %s)", envdeploy.ErrImageMissing, src.Ref, src.What, err, src.PutHint)
	}
	defer rc.Close()
	if err := p.LoadImage(ctx, rc); err != nil {
		return err
	}
	if ok, err := p.HasImage(ctx, src.Ref); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%w: the tarball of %s does not hold %s", envdeploy.ErrImageMissing, src.What, src.Ref)
		}
		return err
	}
	loaded = true
	p.log.Debug("image loaded", "ref", src.Ref, "took", time.Since(start))
	return nil
}

func labelFilter(key, value string) client.Filters {
	f := make(client.Filters)
	if value == "" {
		return f.Add("label", key)
	}
	return f.Add("label", key+"="+value)
}

// hostPort reads the published host port of a container.
func (p *Provider) hostPort(ctx context.Context, id string, port int) (string, error) {
	ins, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", p.wrap("inspect container", err)
	}
	if ins.Container.NetworkSettings == nil {
		return "", fmt.Errorf("docker: container %s has no network settings", id)
	}
	for _, b := range ins.Container.NetworkSettings.Ports[network.MustParsePort(strconv.Itoa(port)+"/tcp")] {
		if b.HostPort != "" && (!b.HostIP.IsValid() || b.HostIP.IsLoopback()) {
			return b.HostPort, nil
		}
	}
	return "", fmt.Errorf("docker: container %s publishes no host port for %d", id, port)
}

// RemoveImage removes an image from the engine (missing is not an error).
func (p *Provider) RemoveImage(ctx context.Context, ref string) error {
	_, err := p.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{Force: true, PruneChildren: true})
	if err != nil && !cerrdefs.IsNotFound(err) {
		return p.wrap("remove image "+ref, err)
	}
	return nil
}
