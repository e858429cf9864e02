package chromium_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentenv/agentenv/internal/chromium"
	"github.com/agentenv/agentenv/internal/chromium/chromiumtest"
)

// ImageFiles holds the real program, its resources, the NSS module it
// dlopens, the library closure (the loader included) and the fonts, each
// at its host path.
func TestImageFiles(t *testing.T) {
	chromiumtest.Need(t)
	if _, err := os.Stat(chromium.Program); err != nil {
		t.Skipf("skipping: not Debian's layout: %v", err)
	}
	files, err := chromium.ImageFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{chromium.Program, chromium.LibDir + "/resources.pak", chromium.LibDir + "/icudtl.dat",
		chromium.LibDir + "/locales/en-US.pak", "/usr/lib/x86_64-linux-gnu/libsoftokn3.so", "/etc/fonts/fonts.conf"} {
		if files[want] != want {
			t.Errorf("no %s in the image files", want)
		}
	}
	var loader, nss3, font bool
	for dst, src := range files {
		if _, err := os.Stat(src); err != nil {
			t.Errorf("%s: %v", dst, err)
		}
		switch {
		case filepath.Base(dst) == "ld-linux-x86-64.so.2":
			loader = true
		case filepath.Base(dst) == "libnss3.so":
			nss3 = true
		case filepath.Ext(dst) == ".ttf" || filepath.Ext(dst) == ".otf":
			font = true
		}
	}
	if !loader || !nss3 || !font {
		t.Errorf("loader %v, libnss3 %v, a font %v in %d files", loader, nss3, font, len(files))
	}
}

// $AGENTENV_CHROMIUM is the binary Path returns, and a missing one is an
// error naming it rather than a fall back to PATH.
func TestPathFromEnv(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(chromium.EnvBinary, self)
	if p, err := chromium.Path(); err != nil || p != self {
		t.Errorf("Path() = %q, %v; want %s", p, err, self)
	}
	t.Setenv(chromium.EnvBinary, filepath.Join(t.TempDir(), "none"))
	if _, err := chromium.Path(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Path() with a missing $%s: %v", chromium.EnvBinary, err)
	}
}
