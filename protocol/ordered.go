package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"sort"
)

type orderedField struct {
	key   string
	value json.RawMessage
}

// decodeOrderedObject returns the fields of a JSON object in document
// order; encoding/json maps lose it.
func decodeOrderedObject(b []byte) ([]orderedField, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("must be a JSON object")
	}
	var out []orderedField
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, orderedField{key: key, value: v})
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
