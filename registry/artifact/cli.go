package artifact

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/agentenv/agentenv/registry"
)

// CLIInput describes a cli artifact to create.
type CLIInput struct {
	// Path is the executable or script itself, or a folder holding it
	// (and whatever it needs) at Entrypoint.
	Path string
	// Entrypoint is the executable's path within the folder; with a file
	// Path it defaults to the file's name.
	Entrypoint string
	// CommandName is the name it is installed under on PATH; "" = the
	// entrypoint's base name.
	CommandName string
	// EnvID and EnvVersion name the env the tool was generated from.
	EnvID       string
	EnvVersion  int
	Description string
}

// commandNameRE: a file name usable on PATH.
var commandNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$`)

// PutCLI stores a new version of cli artifact id. The entrypoint must be
// a regular file that is executable or starts with "#!" (a script). Every
// file becomes part of file_artifact_universe "<id>-files" (stored with
// its tar.gz), which the artifact pins.
func (s *Store) PutCLI(ctx context.Context, id string, in CLIInput) (*CLI, error) {
	if err := registry.ValidateID(id); err != nil {
		return nil, err
	}
	st, err := os.Stat(in.Path)
	if err != nil {
		return nil, fmt.Errorf("cli %s: %w", id, err)
	}
	dir, entry := in.Path, in.Entrypoint
	if !st.IsDir() {
		if entry != "" && entry != filepath.Base(in.Path) {
			return nil, &registry.InvalidError{Field: "entrypoint", Value: entry, Reason: "with a single file, the entrypoint is that file's name " + filepath.Base(in.Path)}
		}
		dir, entry = "", filepath.Base(in.Path)
	}
	if entry == "" {
		return nil, &registry.InvalidError{Field: "entrypoint", Reason: "required with a folder: the executable's path within it"}
	}
	if err := checkName(entry); err != nil {
		return nil, err
	}
	entryPath := in.Path
	if dir != "" {
		entryPath = filepath.Join(dir, filepath.FromSlash(entry))
	}
	if err := checkRunnable(entryPath); err != nil {
		return nil, fmt.Errorf("cli %s: %w", id, err)
	}
	name := in.CommandName
	if name == "" {
		name = filepath.Base(entry)
	}
	if !commandNameRE.MatchString(name) {
		return nil, &registry.InvalidError{Field: "command_name", Value: name, Reason: "must be a file name of letters, digits and . _ + - (it is installed on PATH)"}
	}
	if in.EnvVersion < 0 || (in.EnvVersion > 0 && in.EnvID == "") {
		return nil, &registry.InvalidError{Field: "env_version", Value: fmt.Sprint(in.EnvVersion), Reason: "must be positive, and given with env_id"}
	}
	if _, err := s.next(ctx, TypeCLI, id); err != nil {
		return nil, err
	}
	filesID := id + "-files"
	uo := &UniverseOptions{Bundle: true, Description: "files of cli " + id}
	var u *FileArtifactUniverse
	if dir != "" {
		u, err = s.PutUniverseFromDir(ctx, filesID, dir, uo)
	} else {
		var f *File
		if f, err = s.PutFileFromPath(ctx, filesID+"/"+entry, in.Path, entry, ""); err == nil {
			u, err = s.PutUniverse(ctx, filesID, map[string]registry.Ref{entry: f.Ref()}, uo)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cli %s: %w", id, err)
	}
	d, err := s.put(ctx, TypeCLI, id, nil, func(int, map[string]stored) (any, error) {
		return CLI{Header: Header{Type: TypeCLI, Description: in.Description}, CLIFilesID: u.ID, CLIFilesRef: refOf(u.Header),
			CLIS3URL: u.BundleS3URL, Entrypoint: entry, CommandName: name, EnvID: in.EnvID, EnvVersion: in.EnvVersion}, nil
	})
	if err != nil {
		return nil, err
	}
	var c CLI
	return &c, d.Decode(&c)
}

// checkRunnable refuses an entrypoint that is not a regular file, or is
// neither executable nor a "#!" script.
func checkRunnable(p string) error {
	st, err := os.Lstat(p) // a symbolic link is not stored with the files
	if err != nil {
		return &registry.InvalidError{Field: "entrypoint", Value: p, Reason: "not found"}
	}
	if !st.Mode().IsRegular() {
		return &registry.InvalidError{Field: "entrypoint", Value: p, Reason: "is not a regular file (links are not stored)"}
	}
	if st.Mode()&0o111 != 0 {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 2)
	if n, _ := io.ReadFull(f, head); n == 2 && string(head) == "#!" {
		return nil
	}
	return &registry.InvalidError{Field: "entrypoint", Value: p, Reason: "is neither executable (chmod +x) nor a script starting with #!"}
}

// GetCLI reads a cli artifact.
func (s *Store) GetCLI(ctx context.Context, ref registry.Ref) (*CLI, error) {
	return get[CLI](ctx, s, ref, TypeCLI)
}

// WriteCLI writes every file of a cli artifact under dir, the entrypoint
// executable (0755), and returns the written paths.
func (s *Store) WriteCLI(ctx context.Context, ref registry.Ref, dir string) (*CLI, []string, error) {
	c, err := s.GetCLI(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	paths, err := s.WriteUniverse(ctx, pinnedOrLatest(c.CLIFilesID, c.CLIFilesRef), dir)
	if err != nil {
		return c, paths, err
	}
	if err := checkName(c.Entrypoint); err != nil {
		return c, paths, err
	}
	if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(c.Entrypoint)), 0o755); err != nil {
		return c, paths, fmt.Errorf("cli %s: entrypoint %s: %w", c.Ref(), c.Entrypoint, err)
	}
	return c, paths, nil
}
