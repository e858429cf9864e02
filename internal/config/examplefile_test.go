package config

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// The repository's example config loads with the real loader without a
// warning, and documents every table and key the loader knows, so it
// cannot drift from the loader.
func TestConfigExampleLoads(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".agentenv", "config.example.toml")
	body, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Load(&Options{Path: p, Getenv: func(string) string { return "" }, Environ: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		t.Errorf("warning: %s", w)
	}
	text := string(body)
	for _, key := range structKeys(reflect.TypeOf(Config{}), "") {
		name := key[strings.LastIndex(key, ".")+1:]
		if !strings.Contains(text, "["+key+"]") && !strings.Contains(text, "["+key+".") && !strings.Contains(text, name+" =") {
			t.Errorf("the example does not document %s", key)
		}
	}
}

// structKeys lists the dotted toml names of t's fields, tables and keys.
func structKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name := tomlName(t.Field(i))
		if name == "" {
			continue
		}
		out = append(out, prefix+name)
		if ft := t.Field(i).Type; ft.Kind() == reflect.Struct {
			out = append(out, structKeys(ft, prefix+name+".")...)
		}
	}
	return out
}
