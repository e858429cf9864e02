package imagebuild

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"
)

// NotStaticError says a binary cannot run in a FROM scratch image: the
// image has no dynamic loader and no shared libraries, so a dynamically
// linked binary fails there with a bare "no such file or directory".
type NotStaticError struct {
	Path string
	// Interp is the PT_INTERP loader the binary asks for, if any.
	Interp string
	// Needed are its DT_NEEDED shared libraries.
	Needed []string
	// Package is the Go package to suggest in the fix; "" suggests a
	// placeholder.
	Package string
	// Err is set when the file is not a readable ELF executable at all.
	Err error
}

func (e *NotStaticError) Error() string {
	pkg := e.Package
	if pkg == "" {
		pkg = "<package>"
	}
	fix := fmt.Sprintf("build it static with: CGO_ENABLED=0 go build -o %s %s", e.Path, pkg)
	if e.Err != nil {
		return fmt.Sprintf("%s is not a Linux ELF executable (%v), which a FROM scratch image needs; %s", e.Path, e.Err, fix)
	}
	var why []string
	if e.Interp != "" {
		why = append(why, "loader "+e.Interp)
	}
	if len(e.Needed) > 0 {
		why = append(why, "libraries "+strings.Join(e.Needed, ", "))
	}
	return fmt.Sprintf("%s is dynamically linked (needs %s) and cannot run in a FROM scratch image; %s",
		e.Path, strings.Join(why, "; "), fix)
}

func (e *NotStaticError) Unwrap() error { return e.Err }

// ErrNotStatic matches every *NotStaticError with errors.Is.
var ErrNotStatic = errors.New("binary is not static")

// Is lets errors.Is(err, ErrNotStatic) match.
func (e *NotStaticError) Is(target error) bool { return target == ErrNotStatic }

// CheckStatic returns a *NotStaticError unless path is an ELF executable
// with neither a program interpreter nor shared-library dependencies.
// pkg is the Go package the error suggests building from ("" for a
// placeholder).
func CheckStatic(path, pkg string) error {
	f, err := elf.Open(path)
	if err != nil {
		return &NotStaticError{Path: path, Package: pkg, Err: err}
	}
	defer f.Close()
	e := &NotStaticError{Path: path, Package: pkg}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				e.Interp = strings.TrimRight(string(b), "\x00")
			} else {
				e.Interp = "(unreadable)"
			}
		}
	}
	// ImportedLibraries fails on a file without a dynamic section, which
	// is exactly the static case.
	if libs, err := f.ImportedLibraries(); err == nil {
		e.Needed = libs
	}
	if e.Interp == "" && len(e.Needed) == 0 {
		return nil
	}
	return e
}
