package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/registry/envsecret"
	"github.com/agentenv/agentenv/registry/ociregistry"
	"github.com/agentenv/agentenv/runner/envdeploy"
)

// Helpers of the image tests: a real registry on a loopback port that
// counts manifest pushes and may demand basic auth, a FROM scratch image
// tarball as the object store keeps it, and a secret store.

// testRegistry is registry/ociregistry's handler on 127.0.0.1:0.
type testRegistry struct {
	srv        *httptest.Server
	host       string
	user, pass string // required when user != ""
	// manifestPuts counts the manifest PUTs that reached the registry.
	manifestPuts atomic.Int32
}

func startRegistry(t *testing.T, user, pass string) *testRegistry {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"blobs", "manifests"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r := &testRegistry{user: user, pass: pass}
	h := ociregistry.Handler(dir, slog.New(slog.DiscardHandler))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.pass {
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/") {
			r.manifestPuts.Add(1)
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// manifestStatus is the registry's answer to GET /v2/<repo>/manifests/<ref>.
func (r *testRegistry) manifestStatus(t *testing.T, repo, ref string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/v2/"+repo+"/manifests/"+ref, nil)
	req.Header.Set("Accept", "application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json")
	if r.user != "" {
		req.SetBasicAuth(r.user, r.pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// storeImage is the Source of a store image ref: a FROM scratch image
// with one small file, gzipped as the object store keeps it. opened counts
// the tarball's openings.
func storeImage(t *testing.T, ref string, opened *atomic.Int32) envdeploy.Source {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "server")
	if err := os.WriteFile(bin, []byte("not run: kwok nodes start nothing\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.Scratch(imagebuild.Image{Binary: bin, ExposedPorts: []int{envdeploy.MCPPort}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := imagebuild.WriteTarballGz(&buf, ref, img); err != nil {
		t.Fatal(err)
	}
	return envdeploy.Source{Ref: ref, What: "env items v1 (items__env_image)", PutHint: "agent-env env mcp-server put --id items",
		Tarball: func(context.Context) (io.ReadCloser, error) {
			if opened != nil {
				opened.Add(1)
			}
			return io.NopCloser(bytes.NewReader(buf.Bytes())), nil
		}}
}

// dockerConfigJSON is a docker config JSON with user:pass for host.
func dockerConfigJSON(host, user, pass string) string {
	return `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + `"}}}`
}

// secretStore is an envsecret store over a map (no process environment).
func secretStore(t *testing.T, m map[string]string) *envsecret.Store {
	t.Helper()
	s, err := envsecret.New(&envsecret.Options{LookupEnv: func(k string) (string, bool) { v, ok := m[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
