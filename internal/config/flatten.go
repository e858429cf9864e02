package config

import (
	"reflect"
	"sort"
)

// entry is one leaf of the configuration, in display order.
type entry struct {
	key   string // dotted
	value any
}

// entries walks c's TOML-tagged fields in declaration order; maps are
// walked in key order; zero-valued leaves are included.
func entries(c *Config) []entry {
	var out []entry
	walk(reflect.ValueOf(c).Elem(), "", &out)
	env := []entry{
		{"environment.local_sandbox_dir", c.Environment.LocalSandboxDir},
		{"environment.fixture_prefix", c.Environment.FixturePrefix},
		{"environment.snapshot_after_load", c.Environment.SnapshotAfterLoad},
		{"environment.xdg_state_home", c.Environment.XDGStateHome},
	}
	return append(out, env...)
}

func walk(v reflect.Value, prefix string, out *[]entry) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			name := tomlName(t.Field(i))
			if name == "" {
				continue
			}
			walk(v.Field(i), prefix+name+".", out)
		}
	case reflect.Map:
		if v.Len() == 0 {
			*out = append(*out, entry{prefix[:len(prefix)-1], v.Interface()})
			return
		}
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			e := v.MapIndex(k)
			if e.Kind() == reflect.Interface && !e.IsNil() {
				e = e.Elem()
			}
			if e.Kind() == reflect.Map {
				walk(e, prefix+k.String()+".", out)
				continue
			}
			*out = append(*out, entry{prefix + k.String(), e.Interface()})
		}
	default:
		*out = append(*out, entry{prefix[:len(prefix)-1], v.Interface()})
	}
}

// flatten maps every dotted key to its value.
func flatten(c *Config) map[string]any {
	m := map[string]any{}
	for _, e := range entries(c) {
		m[e.key] = e.value
	}
	return m
}
