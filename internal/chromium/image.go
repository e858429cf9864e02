package chromium

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentenv/agentenv/internal/imagebuild"
)

// Debian's layout: /usr/bin/chromium is a shell script that execs the
// real program in LibDir, next to its resources and the GL and Vulkan
// libraries it dlopens.
const (
	LibDir = "/usr/lib/chromium"
	// Program is the real Chromium ELF, the one a FROM scratch image
	// (which has no shell for the wrapper) runs.
	Program = LibDir + "/chromium"
)

// hostLibDir holds the NSS modules Chromium dlopens (softoken, freebl,
// the built-in root certificates), which ldd does not list.
const hostLibDir = "/usr/lib/x86_64-linux-gnu"

// ImageFiles lists what a FROM scratch image needs to run this host's
// Chromium (Program): everything in LibDir (locales, .pak/.dat/.bin
// resources, the dlopen'd GL, SwiftShader and Vulkan libraries), the NSS
// modules Chromium dlopens, the shared-library closure of every ELF among
// them, and fontconfig's configuration with the installed fonts and their
// cache, so pages render text. It maps image paths to host paths, for
// imagebuild.Image.Files; the image's environment must set EnvBinary to
// Program (ImageEnv). ErrNotInstalled when Program is missing.
func ImageFiles(ctx context.Context) (map[string]string, error) {
	if _, err := os.Stat(Program); err != nil {
		return nil, fmt.Errorf("%w: no %s", ErrNotInstalled, Program)
	}
	files := map[string]string{}
	if err := imagebuild.AddTree(files, LibDir, nil); err != nil {
		return nil, fmt.Errorf("chromium: image files: %w", err)
	}
	for _, n := range []string{"libsoftokn3.so", "libfreebl3.so", "libfreeblpriv3.so", "libnssckbi.so",
		"libsoftokn3.chk", "libfreebl3.chk", "libfreeblpriv3.chk"} {
		if p := filepath.Join(hostLibDir, n); exists(p) {
			files[p] = p
		}
	}
	for _, dir := range []string{hostLibDir + "/nss", "/etc/fonts", "/usr/share/fonts", "/usr/local/share/fonts", "/var/cache/fontconfig"} {
		if err := imagebuild.AddTree(files, dir, nil); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("chromium: image files: %w", err)
		}
	}
	var elf []string
	for p := range files {
		if strings.HasSuffix(p, ".chk") || !isELF(p) {
			continue
		}
		elf = append(elf, p)
	}
	if err := imagebuild.AddClosure(ctx, files, elf); err != nil {
		return nil, fmt.Errorf("chromium: %w", err)
	}
	return files, nil
}

// ImageEnv is the environment a FROM scratch Chromium image needs: the
// program's path (there is no PATH, and no shell for Debian's wrapper)
// and a writable HOME for the caches Chromium keeps outside its profile.
func ImageEnv() map[string]string {
	return map[string]string{EnvBinary: Program, "HOME": "/tmp"}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isELF reports whether the host file p starts with the ELF magic.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 4)
	if _, err := io.ReadFull(f, b); err != nil {
		return false
	}
	return bytes.Equal(b, []byte("\x7fELF"))
}
