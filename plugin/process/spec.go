package process

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// PathPrefix is the file name prefix of plugins found on PATH:
// agentenv-plugin-<name>, as git finds git-<name>.
const PathPrefix = "agentenv-plugin-"

// Where a Spec was found.
const (
	FromConfig = "config" // [plugins.<name>] command = [...]
	FromPath   = "path"   // an agentenv-plugin-<name> executable on PATH
)

// pluginName is what a plugin may be called (the plugin registry's rule).
var pluginName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Spec says how to start one process plugin.
type Spec struct {
	// Name is the [plugins.<name>] key, or <name> of agentenv-plugin-<name>.
	Name string
	// Command is the argv to start.
	Command []string
	// Dir is the working folder; "" is the current one. A relative
	// command[0] in config.toml is taken relative to the config file.
	Dir string
	// Settings is the [plugins.<name>] table without command and timeout;
	// it reaches the plugin in plugin/describe.
	Settings map[string]any
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Source is FromConfig or FromPath.
	Source string
}

// DiscoverOptions are what Discover looks at.
type DiscoverOptions struct {
	// Plugins is the config's [plugins] table.
	Plugins map[string]map[string]any
	// ConfigDir is the folder of the config file, for relative commands.
	ConfigDir string
	// Path is the PATH list to search; "" searches nothing.
	Path string
}

// Discover finds the process plugins: every [plugins.<name>] table with a
// command, then every agentenv-plugin-<name> executable on the path whose
// name no table claimed (the first one on the path wins, as a shell's
// lookup does). A table without command is the settings of a plugin found
// on the path, or of a Go plugin, and is not a process plugin by itself.
// Problems in a table are returned; the other plugins are still found.
func Discover(o DiscoverOptions) ([]Spec, []error) {
	var specs []Spec
	var errs []error
	names := make([]string, 0, len(o.Plugins))
	for n := range o.Plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	taken := map[string]bool{}
	for _, name := range names {
		tbl := o.Plugins[name]
		if _, ok := tbl["command"]; !ok {
			continue
		}
		if !pluginName.MatchString(name) {
			errs = append(errs, fmt.Errorf("[plugins.%s]: a plugin name is lower-case letters, digits and '-', starting with a letter", name))
			continue
		}
		s, err := specFromTable(name, tbl, o.ConfigDir)
		taken[name] = true
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs = append(specs, s)
	}
	for _, dir := range filepath.SplitList(o.Path) {
		if dir == "" {
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			name, ok := strings.CutPrefix(e.Name(), PathPrefix)
			if !ok || !pluginName.MatchString(name) || taken[name] {
				continue
			}
			full := filepath.Join(dir, e.Name())
			if !isExecutable(full) {
				continue
			}
			taken[name] = true
			s := Spec{Name: name, Command: []string{full}, Source: FromPath}
			if tbl, ok := o.Plugins[name]; ok {
				st, err := settingsOf(name, tbl, &s)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				s.Settings = st
			}
			specs = append(specs, s)
		}
	}
	return specs, errs
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

func specFromTable(name string, tbl map[string]any, configDir string) (Spec, error) {
	s := Spec{Name: name, Source: FromConfig}
	raw, _ := tbl["command"].([]any)
	for _, a := range raw {
		str, ok := a.(string)
		if !ok || str == "" {
			raw = nil
			break
		}
		s.Command = append(s.Command, str)
	}
	if len(s.Command) == 0 {
		return s, fmt.Errorf("[plugins.%s] command must be a non-empty list of strings, such as [\"python3\", \"plugin.py\"]", name)
	}
	if c := s.Command[0]; strings.ContainsRune(c, filepath.Separator) && !filepath.IsAbs(c) && configDir != "" {
		s.Command[0] = filepath.Join(configDir, c)
	}
	s.Dir = configDir
	st, err := settingsOf(name, tbl, &s)
	if err != nil {
		return s, err
	}
	s.Settings = st
	return s, nil
}

// settingsOf reads timeout into s and returns the rest of the table.
func settingsOf(name string, tbl map[string]any, s *Spec) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range tbl {
		switch k {
		case "command":
		case "timeout":
			d, err := parseTimeout(v)
			if err != nil {
				return nil, fmt.Errorf("[plugins.%s] timeout: %v", name, err)
			}
			s.Timeout = d
		default:
			out[k] = v
		}
	}
	return out, nil
}

func parseTimeout(v any) (time.Duration, error) {
	var d time.Duration
	switch t := v.(type) {
	case string:
		var err error
		if d, err = time.ParseDuration(t); err != nil {
			return 0, fmt.Errorf("%q is not a duration such as \"30s\" or \"5m\"", t)
		}
	case int64:
		d = time.Duration(t) * time.Second
	case float64:
		d = time.Duration(t * float64(time.Second))
	default:
		return 0, fmt.Errorf("must be a duration such as \"30s\", or seconds")
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return d, nil
}
