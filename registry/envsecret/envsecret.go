// Package envsecret is the local SecretStore: the process
// environment first (unless UseEnv is false), then an optional flat JSON or
// YAML file mapping names to values. The file is read once, at New; it must
// exist when configured. Parse errors name the file and line, never a value.
//
//	secrets, err := envsecret.New(&envsecret.Options{FilePath: ".agentenv/secrets.json"})
//	key, ok, _ := secrets.Get(ctx, "LITELLM_API_KEY")
package envsecret

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/agentenv/agentenv/registry"
)

// Options tunes New. A nil *Options means defaults.
type Options struct {
	// UseEnv reads the process environment first; nil = true.
	UseEnv *bool
	// FilePath is a flat JSON object or YAML mapping of names to string
	// values, relative to the working directory; "" = none.
	FilePath string
	// LookupEnv replaces os.LookupEnv (tests); nil = os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Store is the local SecretStore.
type Store struct {
	useEnv bool
	lookup func(string) (string, bool)
	file   map[string]string
}

var _ registry.SecretStore = (*Store)(nil)

// New reads the file (if any) and returns the store.
func New(o *Options) (*Store, error) {
	var opt Options
	if o != nil {
		opt = *o
	}
	s := &Store{useEnv: opt.UseEnv == nil || *opt.UseEnv, lookup: opt.LookupEnv}
	if s.lookup == nil {
		s.lookup = os.LookupEnv
	}
	if opt.FilePath != "" {
		b, err := os.ReadFile(opt.FilePath)
		if err != nil {
			return nil, fmt.Errorf("secret file %s: %w", opt.FilePath, err)
		}
		m, err := parse(b)
		if err != nil {
			return nil, fmt.Errorf("secret file %s: %w", opt.FilePath, err)
		}
		s.file = m
	}
	return s, nil
}

// Get returns the value of name.
func (s *Store) Get(_ context.Context, name string) (string, bool, error) {
	if s.useEnv {
		if v, ok := s.lookup(name); ok {
			return v, true, nil
		}
	}
	v, ok := s.file[name]
	return v, ok, nil
}

// Names lists the names the file defines (never values), for diagnostics.
func (s *Store) Names() []string {
	out := make([]string, 0, len(s.file))
	for k := range s.file {
		out = append(out, k)
	}
	return out
}

func parse(b []byte) (map[string]string, error) {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && t[0] == '{' {
		var raw map[string]any
		if err := json.Unmarshal(t, &raw); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", jsonErrPosition(err))
		}
		m := make(map[string]string, len(raw))
		for k, v := range raw {
			switch x := v.(type) {
			case string:
				m[k] = x
			case float64, bool:
				m[k] = fmt.Sprint(x)
			default:
				return nil, fmt.Errorf("key %q: value must be a string (flat mapping only)", k)
			}
		}
		return m, nil
	}
	return parseFlatYAML(b)
}

// jsonErrPosition keeps the offset of a syntax error and drops any echo
// of the input.
func jsonErrPosition(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return "syntax error at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if ue, ok := err.(*json.UnmarshalTypeError); ok {
		return "wrong type at byte " + strconv.FormatInt(ue.Offset, 10)
	}
	return "malformed"
}

// parseFlatYAML reads "name: value" lines (values plain, 'single' or
// "double" quoted), '#' comments and blank lines; nothing nested.
func parseFlatYAML(b []byte) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") || trim == "---" {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' || strings.HasPrefix(trim, "- ") {
			return nil, fmt.Errorf("line %d: nested values are not supported (flat mapping only)", n)
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("line %d: want \"name: value\"", n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"':
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad double-quoted value for %q", n, k)
			}
			v = u
		case len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'':
			v = strings.ReplaceAll(v[1:len(v)-1], "''", "'")
		default:
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("line %d: %q defined twice", n, k)
		}
		m[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}
