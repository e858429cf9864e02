package imagebuild

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DockerfileName is where ContextTar puts the Dockerfile in the context.
const DockerfileName = ".agentenv.Dockerfile"

// ContextTar packs dir as a build context for the engine's ImageBuild and
// adds dockerfile under DockerfileName (so a Dockerfile outside the context
// works too). The returned name is the Dockerfile path to pass to the
// build. A missing Dockerfile or context is an error naming it.
func ContextTar(dir, dockerfile string) (io.ReadCloser, string, error) {
	df, err := os.ReadFile(dockerfile)
	if err != nil {
		return nil, "", fmt.Errorf("dockerfile %s: %w", dockerfile, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a directory")
		}
		return nil, "", fmt.Errorf("build context %s: %w", dir, err)
	}
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
				return err
			}
			rel = filepath.ToSlash(rel)
			if rel == ".git" || strings.HasPrefix(rel, ".git/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() && !fi.IsDir() {
				return nil // sockets, symlinks: not part of a context
			}
			h, err := tar.FileInfoHeader(fi, "")
			if err != nil {
				return err
			}
			h.Name = rel
			if fi.IsDir() {
				h.Name += "/"
			}
			h.Uid, h.Gid, h.Uname, h.Gname = 0, 0, "", ""
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if fi.IsDir() {
				return nil
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		})
		if err == nil {
			err = tw.WriteHeader(&tar.Header{Name: DockerfileName, Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg})
		}
		if err == nil {
			_, err = tw.Write(df)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, DockerfileName, nil
}
