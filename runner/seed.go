package runner

import (
	"encoding/json"
	"strings"
)

// substituteSeed replaces "<key>" in every string leaf of the fields with
// seed[key], on a copy. changed reports whether anything was replaced.
func substituteSeed(fields map[string]json.RawMessage, seed map[string]string) (map[string]json.RawMessage, bool) {
	if len(seed) == 0 {
		return fields, false
	}
	pairs := make([]string, 0, 2*len(seed))
	for k, v := range seed {
		pairs = append(pairs, "<"+k+">", v)
	}
	rep := strings.NewReplacer(pairs...)
	out := make(map[string]json.RawMessage, len(fields))
	changed := false
	for k, raw := range fields {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			out[k] = raw
			continue
		}
		nv, c := replaceLeaves(v, rep)
		if !c {
			out[k] = raw
			continue
		}
		b, err := json.Marshal(nv)
		if err != nil {
			out[k] = raw
			continue
		}
		out[k] = b
		changed = true
	}
	return out, changed
}

func replaceLeaves(v any, rep *strings.Replacer) (any, bool) {
	switch t := v.(type) {
	case string:
		s := rep.Replace(t)
		return s, s != t
	case []any:
		changed := false
		out := make([]any, len(t))
		for i, e := range t {
			var c bool
			out[i], c = replaceLeaves(e, rep)
			changed = changed || c
		}
		return out, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(t))
		for k, e := range t {
			var c bool
			out[k], c = replaceLeaves(e, rep)
			changed = changed || c
		}
		return out, changed
	}
	return v, false
}
