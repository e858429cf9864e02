package gobuild

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/pelletier/go-toml/v2"
)

// SetFileName is the plugin set's file name, kept next to config.toml.
const SetFileName = "plugins.toml"

// Set is the recorded plugin set (plugins.toml).
type Set struct {
	// AgentenvSource is the agentenv source folder to build from; "" means
	// discover it (see the package doc).
	AgentenvSource string `toml:"agentenv_source,omitempty"`
	// Plugins are the Go plugin modules, in the order they were added.
	Plugins []Module `toml:"plugins"`
}

// Module is one Go plugin.
type Module struct {
	// Path is the import path of the plugin package (its module path when
	// the package is the module's root).
	Path string `toml:"module"`
	// Version is a module version ("v0.2.0", "latest"); "" with Dir.
	Version string `toml:"version,omitempty"`
	// Dir is a local module folder, used through a replace directive.
	Dir string `toml:"path,omitempty"`
	// Names are the plugin names the module registered (filled by plugin
	// add; plugin remove takes either).
	Names []string `toml:"names,omitempty"`
}

// String is "path@version" or "path (dir)".
func (m Module) String() string {
	switch {
	case m.Dir != "":
		return m.Path + " (" + m.Dir + ")"
	case m.Version != "":
		return m.Path + "@" + m.Version
	}
	return m.Path
}

// ReadSet reads a plugin set file; a missing file is an empty set.
func ReadSet(path string) (*Set, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Set{}, nil
	}
	if err != nil {
		return nil, err
	}
	var s Set
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for i, m := range s.Plugins {
		if m.Path == "" {
			return nil, fmt.Errorf("%s: plugin %d has no module", path, i+1)
		}
	}
	return &s, nil
}

// Write writes the set atomically (a temporary file renamed over path).
func (s *Set) Write(path string) error {
	body, err := toml.Marshal(s)
	if err != nil {
		return err
	}
	header := "# The Go plugins compiled into agent-env, written by `agent-env plugin add` and\n" +
		"# `agent-env plugin remove`: the same set builds the same agent-env again.\n\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plugins-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes a failed write
	if _, err := tmp.WriteString(header + string(body)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Put adds m, or replaces the entry of the same import path.
func (s *Set) Put(m Module) {
	for i := range s.Plugins {
		if s.Plugins[i].Path == m.Path {
			s.Plugins[i] = m
			return
		}
	}
	s.Plugins = append(s.Plugins, m)
}

// Remove drops the module whose import path or one of whose plugin names
// is name, and returns it.
func (s *Set) Remove(name string) (Module, bool) {
	for i, m := range s.Plugins {
		if m.Path == name || slices.Contains(m.Names, name) {
			s.Plugins = append(s.Plugins[:i:i], s.Plugins[i+1:]...)
			return m, true
		}
	}
	return Module{}, false
}
