package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/agentenv/agentenv/internal/decodeerr"
	"github.com/agentenv/agentenv/internal/didyoumean"
)

// Options tunes Load. A nil *Options means defaults.
type Options struct {
	// Path, when set, is the file to read (it must exist), skipping
	// discovery; it counts as programmatic configuration.
	Path string
	// WorkDir is where discovery starts; "" = the working directory.
	WorkDir string
	// Getenv and Environ replace os.Getenv / os.Environ (tests).
	Getenv  func(string) string
	Environ func() []string
	// Override applies programmatic configuration (CLI flags) last; the
	// keys it changes are reported with source "code".
	Override func(*Config)
	// SandboxProviders and StoreImpls (kind → impl names) are the names
	// plugins add to the built-in ones; validation accepts them.
	SandboxProviders []string
	StoreImpls       map[string][]string
}

// Warning is a non-fatal problem found while loading.
type Warning struct {
	File       string // "" for environment variables
	Line       int    // 0 when unknown
	Key        string // dotted key, e.g. "sandbx" or "model.bse_url"
	Message    string
	Suggestion string // "" when nothing is close
}

func (w Warning) String() string {
	var b strings.Builder
	if w.File != "" {
		b.WriteString(w.File)
		if w.Line > 0 {
			fmt.Fprintf(&b, ":%d", w.Line)
		}
		b.WriteString(": ")
	}
	b.WriteString(w.Message)
	if w.Suggestion != "" {
		s := w.Suggestion
		if !strings.HasPrefix(s, "[") {
			s = strconv.Quote(s)
		}
		b.WriteString("; did you mean " + s + "?")
	}
	return b.String()
}

// Error is a fatal configuration problem. It names the file (and line,
// key) when there is one.
type Error struct {
	File string
	Line int
	Key  string
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("config")
	if e.File != "" {
		b.WriteString(" " + e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNotFound is wrapped when AGENT_ENV_CONFIG or Options.Path names a
// missing file.
var ErrNotFound = errors.New("config file not found")

// Discover returns the config file to use: AGENT_ENV_CONFIG (must exist),
// else the nearest .agentenv/config.toml walking up from workDir, else "".
func Discover(workDir string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("AGENT_ENV_CONFIG"); p != "" {
		if err := mustExist(p); err != nil {
			return "", &Error{File: p, Msg: "AGENT_ENV_CONFIG names a file that cannot be used: " + err.Error(), Err: err}
		}
		return p, nil
	}
	if workDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", nil // no working directory: no discovered file
		}
		workDir = wd
	}
	dir, err := filepath.Abs(workDir)
	if err != nil {
		return "", nil
	}
	for {
		p := filepath.Join(dir, ".agentenv", "config.toml")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

func mustExist(p string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrNotFound, p)
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", p)
	}
	return nil
}

// Load discovers, reads and merges the configuration.
func Load(o *Options) (*Config, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Environ == nil {
		opt.Environ = os.Environ
	}
	c := Defaults()
	path := opt.Path
	if path != "" {
		if err := mustExist(path); err != nil {
			return nil, &Error{File: path, Msg: err.Error(), Err: err}
		}
	} else {
		p, err := Discover(opt.WorkDir, opt.Getenv)
		if err != nil {
			return nil, err
		}
		path = p
	}
	if path != "" {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		if err := c.readFile(path); err != nil {
			return nil, err
		}
	}
	c.applyEnv(opt.Getenv, opt.Environ)
	if opt.Override != nil {
		before := flatten(c)
		opt.Override(c)
		for k, v := range flatten(c) {
			if !reflect.DeepEqual(before[k], v) {
				c.sources[k] = codeSourceName
			}
		}
	}
	for _, spec := range []*StoreSpec{&c.Stores.Document, &c.Stores.Object, &c.Stores.Image, &c.Stores.Secret} {
		if spec.Impl == "" { // a [stores.<kind>] table with only config
			spec.Impl = DefaultStoreImpl
		}
	}
	c.pluginSandboxes, c.pluginStores = opt.SandboxProviders, opt.StoreImpls
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Runner.Impl != TemporalRunnerImpl {
		c.Runner.Impl = DefaultRunnerImpl // every other accepted name is the one local runner
	}
	c.checkStoreConfigKeys()
	return c, nil
}

func (c *Config) readFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return &Error{File: path, Msg: "cannot read: " + err.Error(), Err: err}
	}
	c.File = path
	// Syntax first, on a generic map: it also tells tables from keys.
	var raw map[string]any
	if err := toml.Unmarshal(b, &raw); err != nil {
		return decodeErr(path, err)
	}
	// Strict pass: collects unknown tables and keys.
	var scratch Config
	dec := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().EnableUnmarshalerInterface()
	if err := dec.Decode(&scratch); err != nil {
		var sm *toml.StrictMissingError
		if !errors.As(err, &sm) {
			return decodeErr(path, err)
		}
		for _, de := range sm.Errors {
			row, _ := de.Position()
			key := []string(de.Key())
			if err := c.unknown(path, row, key, raw); err != nil {
				return err
			}
		}
	}
	// Lenient pass over the defaults: file beats default, key by key.
	if err := toml.NewDecoder(bytes.NewReader(b)).EnableUnmarshalerInterface().Decode(c); err != nil {
		return decodeErr(path, err)
	}
	for _, spec := range []*StoreSpec{&c.Stores.Document, &c.Stores.Object, &c.Stores.Image, &c.Stores.Secret} {
		for _, w := range spec.problems {
			w.File = path
			c.Warnings = append(c.Warnings, w)
		}
		spec.problems = nil
	}
	for _, k := range leafKeys(raw, "") {
		c.sources[k] = fileSourceName
	}
	// A store given as an alias is the impl key.
	for _, kind := range []string{"document", "object", "image", "secret"} {
		if c.sources["stores."+kind] == fileSourceName {
			delete(c.sources, "stores."+kind)
			c.sources["stores."+kind+".impl"] = fileSourceName
		}
	}
	return c.checkStrictSections(path, raw)
}

func decodeErr(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return &Error{File: path, Line: row, Key: strings.Join(de.Key(), "."), Msg: decodeerr.TOML(de), Err: err}
	}
	return &Error{File: path, Msg: decodeerr.TOML(err), Err: err}
}

// unknown records a warning (with a suggestion) for an unknown key; in
// [agents] it is an error.
func (c *Config) unknown(path string, line int, key []string, raw map[string]any) error {
	dotted := strings.Join(key, ".")
	parent := key[:len(key)-1]
	name := key[len(key)-1]
	if len(parent) == 1 && parent[0] == "agents" {
		return &Error{File: path, Line: line, Key: dotted,
			Msg: "unknown key: [agents] accepts only default_a2a_agent_id"}
	}
	isTable := false
	if v, ok := lookupRaw(raw, key); ok {
		_, isTable = v.(map[string]any)
	}
	cands := knownKeys(reflect.TypeOf(Config{}), parent)
	w := Warning{File: path, Line: line, Key: dotted}
	if isTable {
		w.Message = "unknown table [" + dotted + "]"
		if s := suggest(name, cands); s != "" {
			w.Suggestion = "[" + strings.Join(append(append([]string{}, parent...), s), ".") + "]"
		}
	} else {
		w.Message = "unknown key " + strconv.Quote(dotted)
		if len(parent) > 0 {
			w.Message = "unknown key " + strconv.Quote(name) + " in [" + strings.Join(parent, ".") + "]"
		}
		if s := suggest(name, cands); s != "" {
			w.Suggestion = s
		}
	}
	c.Warnings = append(c.Warnings, w)
	return nil
}

// reservedModelParams are request fields the runner sets itself.
var reservedModelParams = []string{"model", "messages", "tools", "tool_choice", "stream", "api_key", "base_url"}

func (c *Config) checkStrictSections(path string, raw map[string]any) error {
	for _, k := range reservedModelParams {
		if _, ok := c.Model.Params[k]; ok {
			return &Error{File: path, Key: "model.params." + k,
				Msg: "reserved key: the runner sets it (reserved: " + strings.Join(reservedModelParams, ", ") + ")"}
		}
	}
	return nil
}

func lookupRaw(raw map[string]any, key []string) (any, bool) {
	var cur any = raw
	for _, k := range key {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// leafKeys lists the dotted keys of non-table values in raw.
func leafKeys(raw map[string]any, prefix string) []string {
	var out []string
	for k, v := range raw {
		if m, ok := v.(map[string]any); ok {
			out = append(out, leafKeys(m, prefix+k+".")...)
			continue
		}
		out = append(out, prefix+k)
	}
	sort.Strings(out)
	return out
}

// knownKeys lists the toml names of the struct reached by path in t (nil
// when path leads into a map or an unknown field).
func knownKeys(t reflect.Type, path []string) []string {
	for _, p := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return nil
		}
		t = f.Type
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if tag := tomlName(t.Field(i)); tag != "" {
			out = append(out, tag)
		}
	}
	return out
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if tomlName(t.Field(i)) == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func tomlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if tag == "-" {
		return ""
	}
	return tag
}

// suggest returns the candidate closest to name, if it is close enough.
func suggest(name string, cands []string) string { return didyoumean.Closest(name, cands) }
