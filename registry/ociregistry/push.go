package ociregistry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Opener opens an image tarball (docker save format, optionally gzipped),
// e.g. from the object store. It may be called several times.
type Opener func() (io.ReadCloser, error)

// PushOptions tunes PushTarball. A nil *PushOptions means defaults: no
// credentials, http.DefaultClient, and the scheme picked by host.
type PushOptions struct {
	// Username and Password are sent as HTTP basic auth to the registry
	// host (never to an upload URL on another host); "" = anonymous. Only
	// basic auth is spoken, not the bearer-token exchange of hosted
	// registries.
	Username, Password string
	// Scheme is "http" or "https". "" = http for a loopback host
	// (localhost, 127.0.0.0/8, ::1: the project's own registry, which
	// container engines accept without TLS) and https for any other.
	Scheme string
	// Client sends the requests; nil = http.DefaultClient.
	Client *http.Client
}

// PushTarball pushes the image in the tarball to ref
// ("localhost:5000/items__env_image:v1") and returns the manifest digest.
// The tarball must hold exactly one image.
//
// It speaks the distribution API directly (monolithic blob uploads and a
// manifest PUT) instead of go-containerregistry's remote package, whose
// credential helpers would pull the Docker CLI into the module.
func PushTarball(ctx context.Context, open Opener, ref string, o *PushOptions) (string, error) {
	host, repo, tag, err := splitRef(ref)
	if err != nil {
		return "", err
	}
	var opt PushOptions
	if o != nil {
		opt = *o
	}
	switch opt.Scheme {
	case "":
		opt.Scheme = "https"
		if IsLoopbackHost(host) {
			opt.Scheme = "http"
		}
	case "http", "https":
	default:
		return "", fmt.Errorf("push %s: scheme %q: want http or https", ref, opt.Scheme)
	}
	if opt.Client == nil {
		opt.Client = http.DefaultClient
	}
	img, err := tarball.Image(func() (io.ReadCloser, error) { return gunzipIfNeeded(open) }, nil)
	if err != nil {
		return "", fmt.Errorf("push %s: read tarball: %w", ref, err)
	}
	p := pusher{ctx: ctx, host: host, base: opt.Scheme + "://" + host + "/v2/" + repo, opt: opt}
	layers, err := img.Layers()
	if err != nil {
		return "", fmt.Errorf("push %s: layers: %w", ref, err)
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return "", fmt.Errorf("push %s: layer digest: %w", ref, err)
		}
		if err := p.blob(d, func() (io.ReadCloser, error) { return l.Compressed() }); err != nil {
			return "", fmt.Errorf("push %s: layer %s: %w", ref, d, err)
		}
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return "", fmt.Errorf("push %s: config: %w", ref, err)
	}
	cd, err := img.ConfigName()
	if err != nil {
		return "", fmt.Errorf("push %s: config digest: %w", ref, err)
	}
	if err := p.blob(cd, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(cfg)), nil }); err != nil {
		return "", fmt.Errorf("push %s: config blob: %w", ref, err)
	}
	man, err := img.RawManifest()
	if err != nil {
		return "", fmt.Errorf("push %s: manifest: %w", ref, err)
	}
	mt, err := img.MediaType()
	if err != nil {
		return "", fmt.Errorf("push %s: media type: %w", ref, err)
	}
	if err := p.do(http.MethodPut, p.base+"/manifests/"+tag, string(mt), bytes.NewReader(man), int64(len(man)), http.StatusCreated); err != nil {
		return "", fmt.Errorf("push %s: manifest: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

func splitRef(ref string) (host, repo, tag string, err error) {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || host == "" || rest == "" {
		return "", "", "", fmt.Errorf("push: reference %q: want <host>/<repository>:<tag>", ref)
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 || i == len(rest)-1 {
		return "", "", "", fmt.Errorf("push: reference %q: missing :tag", ref)
	}
	return host, rest[:i], rest[i+1:], nil
}

// IsLoopbackHost reports whether host ("localhost:5000", "127.0.0.1",
// "[::1]:5000") names this machine's loopback interface.
func IsLoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

type pusher struct {
	ctx  context.Context
	host string // the registry's host[:port]: credentials go only there
	base string
	opt  PushOptions
}

// send adds the credentials when req goes to the registry host and sends it.
func (p pusher) send(req *http.Request) (*http.Response, error) {
	if p.opt.Username != "" && req.URL.Host == p.host {
		req.SetBasicAuth(p.opt.Username, p.opt.Password)
	}
	return p.opt.Client.Do(req)
}

func (p pusher) blob(d v1.Hash, open func() (io.ReadCloser, error)) error {
	head, err := http.NewRequestWithContext(p.ctx, http.MethodHead, p.base+"/blobs/"+d.String(), nil)
	if err != nil {
		return err
	}
	if resp, err := p.send(head); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil // already there
		}
	}
	start, err := http.NewRequestWithContext(p.ctx, http.MethodPost, p.base+"/blobs/uploads/", nil)
	if err != nil {
		return err
	}
	resp, err := p.send(start)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("start upload: HTTP %d", resp.StatusCode)
	}
	loc, err := resp.Location()
	if err != nil {
		return fmt.Errorf("start upload: %w", err)
	}
	q := loc.Query()
	q.Set("digest", d.String())
	loc.RawQuery = q.Encode()
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return p.do(http.MethodPut, loc.String(), "application/octet-stream", rc, -1, http.StatusCreated)
}

func (p pusher) do(method, u, contentType string, body io.Reader, size int64, want int) error {
	if _, err := url.Parse(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(p.ctx, method, u, body)
	if err != nil {
		return err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := p.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

type gzReadCloser struct {
	*gzip.Reader
	under io.Closer
}

func (g gzReadCloser) Close() error { g.Reader.Close(); return g.under.Close() }

type bufReadCloser struct {
	*bufio.Reader
	io.Closer
}

func gunzipIfNeeded(open Opener) (io.ReadCloser, error) {
	rc, err := open()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(rc)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			rc.Close()
			return nil, err
		}
		return gzReadCloser{zr, rc}, nil
	}
	return bufReadCloser{br, rc}, nil
}
