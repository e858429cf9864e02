package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/agentenv/agentenv/internal/imagebuild"
)

func TestScratchDeterministicAndLoadable(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "app")
	if err := os.WriteFile(bin, []byte("#!not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	im := imagebuild.Image{Binary: bin, Env: map[string]string{"B": "2", "A": "1"}, ExposedPorts: []int{18765}}
	a, err := imagebuild.Scratch(im)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := imagebuild.Scratch(im)
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("same input, digests %s and %s", da, db)
	}
	path := filepath.Join(dir, "img.tar")
	f, _ := os.Create(path)
	if err := imagebuild.WriteTarball(f, "localhost:5000/x__env_image:v1", a); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Env, ","); got != "A=1,B=2" || cf.Config.Entrypoint[0] != "/app" || cf.OS != "linux" {
		t.Errorf("config %+v", cf.Config)
	}
	if _, ok := cf.Config.ExposedPorts["18765/tcp"]; !ok {
		t.Errorf("ports %v", cf.Config.ExposedPorts)
	}
	layers, _ := back.Layers()
	rc, _ := layers[0].Uncompressed()
	defer rc.Close()
	names := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names[h.Name] = h.Mode
	}
	if names["tmp/"] != 0o1777 || names["app"] != 0o755 || names["var/log/agentenv/"] == 0 {
		t.Errorf("layer entries %v", names)
	}
	if _, err := imagebuild.Scratch(imagebuild.Image{}); err == nil {
		t.Error("an image without a binary was built")
	}
}

func TestContextTar(t *testing.T) {
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\n"), 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o644)
	rc, name, err := imagebuild.ContextTar(dir, filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = io.Copy(&buf, rc)
	rc.Close()
	tr := tar.NewReader(&buf)
	seen := map[string]bool{}
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		seen[h.Name] = true
	}
	if !seen["sub/f"] || !seen[name] || !seen["Dockerfile"] {
		t.Errorf("context entries %v", seen)
	}
	if _, _, err := imagebuild.ContextTar(dir, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing Dockerfile: %v", err)
	}
	if _, _, err := imagebuild.ContextTar(filepath.Join(dir, "nope"), filepath.Join(dir, "Dockerfile")); err == nil {
		t.Error("missing context accepted")
	}
}

func TestBuildGoFailureCarriesLogTail(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles")
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module broken\n\ngo 1.22\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() { undefinedThing() }\n"), 0o644)
	_, err := imagebuild.BuildGo(context.Background(), ".", t.TempDir(), &imagebuild.GoOptions{Dir: dir})
	var be *imagebuild.BuildError
	if !errors.As(err, &be) || !strings.Contains(be.Log, "undefinedThing") {
		t.Fatalf("build failure: %v", err)
	}
}

// A build with Progress says what it compiles, line by line, into any
// writer (a pipe as well as a terminal).
func TestBuildGoProgressLines(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles")
	}
	dir := t.TempDir()
	_ = os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644)
	_ = os.MkdirAll(filepath.Join(dir, "inner"), 0o755)
	// A fresh constant, so the build cache cannot skip the package (go
	// build -v names only the packages it compiles).
	nonce := strings.ReplaceAll(dir, `\`, "/")
	_ = os.WriteFile(filepath.Join(dir, "inner", "inner.go"), []byte("package inner\n\nconst Nonce = \""+nonce+"\"\n\nfunc N() int { return len(Nonce) }\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"tiny/inner\"\n\nfunc main() { _ = inner.N() }\n"), 0o644)
	var progress bytes.Buffer
	if _, err := imagebuild.BuildGo(context.Background(), ".", t.TempDir(), &imagebuild.GoOptions{Dir: dir, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	out := progress.String()
	for _, want := range []string{"Building . (go build;", "  compiling tiny/inner\n", "Built .\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}
