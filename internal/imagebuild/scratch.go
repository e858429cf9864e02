package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Dir is an empty directory of the image.
type Dir struct {
	Path string
	Mode os.FileMode
}

// DefaultDirs are the directories scratch images need:
// /tmp (1777) for third-party code, /var/log/agentenv for trajectories and
// /data for environment files copied in by load_artifact.
var DefaultDirs = []Dir{
	{"/tmp", os.ModeSticky | 0o777},
	{"/var/log/agentenv", 0o777},
	{"/data", 0o777},
}

// Image describes a FROM scratch image around one static binary.
type Image struct {
	// Binary is the host path of the static binary.
	Binary string
	// Entrypoint is the binary's path in the image; "" is "/<base name>".
	Entrypoint string
	Env        map[string]string
	// ExposedPorts are TCP ports.
	ExposedPorts []int
	// Dirs are created empty; nil means DefaultDirs.
	Dirs []Dir
	// Files maps image paths to host paths copied in (e.g. a CA bundle at
	// /etc/ssl/certs/ca-certificates.crt), with the host file's
	// permissions; a symbolic link is copied as the file it points to.
	Files  map[string]string
	Labels map[string]string
	// Platform defaults to linux/<GOARCH of the binary's build>; "" is
	// linux/amd64 unless Arch is set.
	Arch string
}

// epoch keeps layers deterministic: the same binary gives the same digest.
var epoch = time.Unix(0, 0).UTC()

// Scratch assembles the image.
func Scratch(im Image) (v1.Image, error) {
	if im.Binary == "" {
		return nil, fmt.Errorf("imagebuild: Image.Binary is required")
	}
	entry := im.Entrypoint
	if entry == "" {
		entry = "/" + filepath.Base(im.Binary)
	}
	dirs := im.Dirs
	if dirs == nil {
		dirs = DefaultDirs
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	made := map[string]bool{}
	var mkdirs func(p string, mode os.FileMode) error
	mkdirs = func(p string, mode os.FileMode) error {
		p = strings.Trim(path.Clean("/"+p), "/")
		if p == "" || made[p] {
			return nil
		}
		if parent := path.Dir(p); parent != "." {
			if err := mkdirs(parent, 0o755); err != nil {
				return err
			}
		}
		made[p] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: int64(mode.Perm()) | modeBits(mode), ModTime: epoch})
	}
	addFile := func(dst, src string, mode int64) error {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("imagebuild: %w", err)
		}
		dst = strings.Trim(path.Clean("/"+dst), "/")
		if err := mkdirs(path.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: mode, Size: int64(len(b)), ModTime: epoch}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	}
	for _, d := range dirs {
		if err := mkdirs(d.Path, d.Mode); err != nil {
			return nil, err
		}
	}
	if err := addFile(entry, im.Binary, 0o755); err != nil {
		return nil, err
	}
	dsts := make([]string, 0, len(im.Files))
	for dst := range im.Files {
		dsts = append(dsts, dst)
	}
	sort.Strings(dsts)
	for _, dst := range dsts {
		// The host file's permissions: programs and the dynamic loader
		// of a library closure must stay executable.
		mode := int64(0o644)
		if st, err := os.Stat(im.Files[dst]); err == nil {
			mode = int64(st.Mode().Perm())
		}
		if err := addFile(dst, im.Files[dst], mode); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	// The layer is gzip-framed without compression: the object store keeps
	// the whole tarball gzipped (WriteTarballGz), so compressing the layer
	// too would only do the work twice.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithCompressionLevel(gzip.NoCompression))
	if err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	arch := im.Arch
	if arch == "" {
		arch = "amd64"
	}
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{entry}
	keys := make([]string, 0, len(im.Env))
	for k := range im.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cf.Config.Env = append(cf.Config.Env, k+"="+im.Env[k])
	}
	if len(im.ExposedPorts) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range im.ExposedPorts {
			cf.Config.ExposedPorts[strconv.Itoa(p)+"/tcp"] = struct{}{}
		}
	}
	cf.Config.Labels = im.Labels
	return mutate.ConfigFile(img, cf)
}

func modeBits(m os.FileMode) int64 {
	var b int64
	if m&os.ModeSticky != 0 {
		b |= 0o1000
	}
	return b
}

// WriteTarball writes img as a docker-save tarball tagged ref.
func WriteTarball(w io.Writer, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("imagebuild: image ref %q: %w", ref, err)
	}
	return tarball.Write(tag, img, w)
}

// WriteTarballGz is WriteTarball through gzip (the object-store format).
func WriteTarballGz(w io.Writer, ref string, img v1.Image) error {
	// The layers inside are compressed already: the outer gzip only has to
	// satisfy the .tar.gz format of the object store.
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err := WriteTarball(zw, ref, img); err != nil {
		return err
	}
	return zw.Close()
}
