package bundle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// ErrNotFound is matched when a bundle name or folder does not exist.
var ErrNotFound = errors.New("bundle not found")

// ErrInvalid is matched by every malformed-bundle error.
var ErrInvalid = errors.New("invalid bundle")

// Bundle is a parsed bundle folder.
type Bundle struct {
	Name        string // folder name ("hello")
	Package     string // "agentenv-framework" for installed bundles
	Description string // first line of README.md
	IDRoot      string // "@local/agentenv-framework/hello"
	Dir         string // where it was found (display)
	Artifacts   []Artifact
	Tasks       []TaskFile
	Evals       []EvalFile
}

// Artifact is one artifacts/<name>/ folder.
type Artifact struct {
	Name  string
	Files map[string][]byte // relative path (may contain '/') -> content
}

// Type is file for one file, file_artifact_universe for several.
func (a Artifact) Type() string {
	if len(a.Files) == 1 {
		return "file"
	}
	return "file_artifact_universe"
}

// FileNames lists the files, sorted.
func (a Artifact) FileNames() []string {
	out := make([]string, 0, len(a.Files))
	for n := range a.Files {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TaskFile is one tasks/<name>.json.
type TaskFile struct {
	Name string // "hello"
	File string // "tasks/hello.json"
	Raw  []byte
}

// EvalFile is one evals/<name>.toml.
type EvalFile struct {
	Name string // "smoke"
	File string // "evals/smoke.toml"
	Raw  []byte
}

// Installed lists the installed bundles of fsys (<package>/<bundle>/).
func Installed(fsys fs.FS) ([]*Bundle, error) {
	pkgs, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []*Bundle
	for _, p := range pkgs {
		if !p.IsDir() {
			continue
		}
		names, err := fs.ReadDir(fsys, p.Name())
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if !n.IsDir() {
				continue
			}
			sub, err := fs.Sub(fsys, p.Name()+"/"+n.Name())
			if err != nil {
				return nil, err
			}
			b, err := Load(sub, n.Name(), "@local/"+p.Name()+"/"+n.Name())
			if err != nil {
				return nil, err
			}
			b.Package = p.Name()
			b.Dir = "(built in) " + p.Name() + "/" + n.Name()
			out = append(out, b)
		}
	}
	return out, nil
}

// Locate resolves a command-line argument: an existing folder, or one
// starting with ".", "/" or "~", is a folder; anything else is an installed
// bundle name ("<package>/<name>" disambiguates).
func Locate(arg string, installed fs.FS) (*Bundle, error) {
	if arg == "" {
		return nil, fmt.Errorf("%w: empty bundle name", ErrNotFound)
	}
	isDir := false
	if fi, err := os.Stat(expandHome(arg)); err == nil && fi.IsDir() {
		isDir = true
	}
	if isDir || strings.HasPrefix(arg, ".") || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "~") {
		return LoadDir(expandHome(arg))
	}
	all, err := Installed(installed)
	if err != nil {
		return nil, err
	}
	var matches []*Bundle
	for _, b := range all {
		if b.Name == arg || b.Package+"/"+b.Name == arg {
			matches = append(matches, b)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		names := make([]string, 0, len(all))
		for _, b := range all {
			names = append(names, b.Name)
		}
		return nil, fmt.Errorf("%w: no installed bundle %q and no such folder (installed: %s)", ErrNotFound, arg, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("%w: %q names several bundles; write <package>/%s", ErrNotFound, arg, arg)
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

// LoadDir loads a bundle folder; its id root derives from its path
// ("@local/~/my-hello" under the home folder).
func LoadDir(dir string) (*Bundle, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a folder", ErrNotFound, dir)
	}
	root := "@local/" + strings.TrimPrefix(filepath.ToSlash(abs), "/")
	if home, err := os.UserHomeDir(); err == nil {
		if rel, err := filepath.Rel(home, abs); err == nil && !strings.HasPrefix(rel, "..") && rel != "." {
			root = "@local/~/" + filepath.ToSlash(rel)
		}
	}
	if err := registry.ValidateID(root); err != nil {
		return nil, fmt.Errorf("%w: folder %s gives the id root %q: %v", ErrInvalid, dir, root, err)
	}
	b, err := Load(os.DirFS(abs), filepath.Base(abs), root)
	if err != nil {
		return nil, err
	}
	b.Package = filepath.Base(filepath.Dir(abs))
	b.Dir = abs
	return b, nil
}

var kindFolders = map[string]bool{"envs": true, "agents": true, "artifacts": true, "skills": true, "tasks": true, "evals": true}

// Load parses a bundle from fsys (its root is the bundle folder).
func Load(fsys fs.FS, name, idRoot string) (*Bundle, error) {
	b := &Bundle{Name: name, IDRoot: idRoot}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotFound, name, err)
	}
	for _, e := range entries {
		switch {
		case e.Name() == "bundle.toml":
			return nil, fmt.Errorf("%w: %s: bundle.toml is reserved", ErrInvalid, name)
		case e.Name() == "README.md":
			readme, err := fs.ReadFile(fsys, "README.md")
			if err != nil {
				return nil, err
			}
			first, _, _ := strings.Cut(string(readme), "\n")
			b.Description = strings.TrimSpace(strings.TrimLeft(first, "# "))
		case e.IsDir() && kindFolders[e.Name()]:
		case e.IsDir() && strings.HasPrefix(e.Name(), "."):
		case e.IsDir():
			return nil, fmt.Errorf("%w: %s: unknown folder %q (kind folders: envs, agents, artifacts, skills, tasks, evals)", ErrInvalid, name, e.Name())
		}
	}
	for _, kind := range []string{"envs", "agents", "skills"} {
		if list, err := fs.ReadDir(fsys, kind); err == nil && len(list) > 0 {
			return nil, fmt.Errorf("%w: %s: %s/ is not supported by this build yet (tasks/ and artifacts/ are)", ErrInvalid, name, kind)
		}
	}
	if arts, err := fs.ReadDir(fsys, "artifacts"); err == nil {
		for _, a := range arts {
			if !a.IsDir() {
				return nil, fmt.Errorf("%w: %s: artifacts/%s: an artifact is a folder", ErrInvalid, name, a.Name())
			}
			art := Artifact{Name: a.Name(), Files: map[string][]byte{}}
			err := fs.WalkDir(fsys, "artifacts/"+a.Name(), func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel := strings.TrimPrefix(p, "artifacts/"+a.Name()+"/")
				switch rel {
				case "artifact.toml":
					return fmt.Errorf("%w: %s: artifacts/%s/artifact.toml is not supported by this build yet", ErrInvalid, name, a.Name())
				case "Dockerfile":
					return fmt.Errorf("%w: %s: artifacts/%s: docker_image artifacts are not supported by this build yet", ErrInvalid, name, a.Name())
				}
				c, err := fs.ReadFile(fsys, p)
				if err != nil {
					return err
				}
				art.Files[rel] = c
				return nil
			})
			if err != nil {
				return nil, err
			}
			if len(art.Files) == 0 {
				return nil, fmt.Errorf("%w: %s: artifacts/%s is empty", ErrInvalid, name, a.Name())
			}
			b.Artifacts = append(b.Artifacts, art)
		}
	}
	if tasks, err := fs.ReadDir(fsys, "tasks"); err == nil {
		for _, t := range tasks {
			if t.IsDir() || path.Ext(t.Name()) != ".json" {
				return nil, fmt.Errorf("%w: %s: tasks/%s: a task is tasks/<name>.json", ErrInvalid, name, t.Name())
			}
			raw, err := fs.ReadFile(fsys, "tasks/"+t.Name())
			if err != nil {
				return nil, err
			}
			b.Tasks = append(b.Tasks, TaskFile{Name: strings.TrimSuffix(t.Name(), ".json"), File: "tasks/" + t.Name(), Raw: raw})
		}
	}
	if evals, err := fs.ReadDir(fsys, "evals"); err == nil {
		for _, e := range evals {
			if e.IsDir() || path.Ext(e.Name()) != ".toml" {
				return nil, fmt.Errorf("%w: %s: evals/%s: an eval is evals/<name>.toml", ErrInvalid, name, e.Name())
			}
			raw, err := fs.ReadFile(fsys, "evals/"+e.Name())
			if err != nil {
				return nil, err
			}
			b.Evals = append(b.Evals, EvalFile{Name: strings.TrimSuffix(e.Name(), ".toml"), File: "evals/" + e.Name(), Raw: raw})
		}
	}
	if len(b.Tasks) == 0 {
		return nil, fmt.Errorf("%w: %s has no tasks/<name>.json", ErrInvalid, name)
	}
	return b, nil
}

// Contents summarises the bundle for listings ("1 task, 1 artifact").
func (b *Bundle) Contents() string {
	plural := func(n int, s string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, s)
		}
		return fmt.Sprintf("%d %ss", n, s)
	}
	s := plural(len(b.Tasks), "task") + ", " + plural(len(b.Artifacts), "artifact")
	if len(b.Evals) > 0 {
		s += ", " + plural(len(b.Evals), "eval")
	}
	return s
}

// Export copies the installed bundle tree fsys into dir
// (<dir>/<package>/<bundle>/...), rewriting only files whose content
// differs, so that a listing can show a real folder to copy.
func Export(fsys fs.FS, dir string) error {
	return fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(dst); err == nil && string(old) == string(b) {
			return nil
		}
		return os.WriteFile(dst, b, 0o644)
	})
}
