package config

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/agentenv/agentenv/registry/redact"
)

// Show prints the effective configuration as TOML, one comment per key
// naming its source, secrets masked (references are printed as written),
// preceded by the file used and the warnings.
func (c *Config) Show(w io.Writer) error {
	bw := &errWriter{w: w}
	if c.File != "" {
		bw.printf("# config file: %s\n", c.File)
	} else {
		bw.printf("# config file: none (built-in defaults)\n")
	}
	for _, warn := range c.Warnings {
		bw.printf("# warning: %s\n", warn)
	}
	section := ""
	for _, e := range entries(c) {
		if isEmptyMap(e.value) {
			continue
		}
		sec, key := splitKey(e.key)
		if sec != section {
			section = sec
			bw.printf("\n[%s]  # %s\n", sec, strings.Join(c.sectionSources(sec), ", "))
		}
		src := c.Source(e.key)
		if isZero(e.value) && src == defaultSourceName {
			bw.printf("# %s = (unset)\n", key)
			continue
		}
		bw.printf("%s = %s  # %s\n", key, display(e.key, e.value), src)
	}
	return bw.err
}

// ShowJSON prints {"file", "values", "sources", "warnings"} with the same
// masking as Show.
func (c *Config) ShowJSON(w io.Writer) error {
	values := map[string]any{}
	sources := map[string]string{}
	for _, e := range entries(c) {
		if isEmptyMap(e.value) {
			continue
		}
		values[e.key] = maskAny(e.key, e.value)
		sources[e.key] = c.Source(e.key)
	}
	warnings := make([]string, 0, len(c.Warnings))
	for _, warn := range c.Warnings {
		warnings = append(warnings, warn.String())
	}
	out := struct {
		File     string            `json:"file"`
		Values   map[string]any    `json:"values"`
		Sources  map[string]string `json:"sources"`
		Warnings []string          `json:"warnings"`
	}{c.File, values, sources, warnings}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// Explain returns the displayed (masked) value of a dotted key and its
// source. An unknown key is an error with a suggestion.
func (c *Config) Explain(key string) (value, source string, err error) {
	var keys []string
	for _, e := range entries(c) {
		if e.key == key {
			return display(e.key, e.value), c.Source(e.key), nil
		}
		keys = append(keys, e.key)
	}
	msg := "unknown key " + key
	if s := suggest(key, keys); s != "" {
		msg += "; did you mean " + s + "?"
	}
	return "", "", &Error{Key: key, Msg: msg}
}

func (c *Config) sectionSources(sec string) []string {
	set := map[string]bool{}
	for _, e := range entries(c) {
		if s, _ := splitKey(e.key); s == sec && !isEmptyMap(e.value) {
			set[c.Source(e.key)] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func splitKey(k string) (section, key string) {
	i := strings.LastIndex(k, ".")
	if i < 0 {
		return "", k
	}
	return k[:i], k[i+1:]
}

// secretPath: the last component of the key names a secret.
func secretPath(key string) bool {
	_, last := splitKey(key)
	return redact.IsSecretKey(last) || redact.IsSafeFormKey(last)
}

func maskAny(key string, v any) any {
	switch t := v.(type) {
	case string:
		if secretPath(key) {
			return redact.MaskValue("secret", t)
		}
		return redact.MaskURL(t)
	case map[string]any:
		return redact.Mask(t)
	case []any:
		return redact.Mask(map[string]any{"x": t}).(map[string]any)["x"]
	}
	return v
}

func display(key string, v any) string {
	switch t := maskAny(key, v).(type) {
	case string:
		return strconv.Quote(t)
	case bool, int, int64, float64:
		return fmt.Sprint(t)
	default:
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Sprintf("%q", fmt.Sprint(t))
		}
		return string(b)
	}
}

func isZero(v any) bool {
	if v == nil {
		return true
	}
	return reflect.ValueOf(v).IsZero()
}

func isEmptyMap(v any) bool {
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Map && rv.Len() == 0
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
