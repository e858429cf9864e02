package decodeerr

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

// goType matches what a user must never read: a Go type or struct path.
var goType = regexp.MustCompile(`\[\][a-z]+\.[A-Z]|\b[a-z]+\.[A-Z][A-Za-z]*\.[A-Z]|Go (value|struct)|&\{`)

func TestJSON(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		into any
		want string
	}{
		{`{"a":1}`, new([]json.RawMessage), "line 1, column 2: must be a list, got an object"},
		{"[\n {\"a\":1,}]", new([]json.RawMessage), "JSON syntax error at line 2, column 9: invalid character '}' looking for beginning of object key string"},
		{`[1,`, new([]int), "JSON syntax error at line 1, column 3: unexpected end of JSON input"},
		{`{"task_id":3}`, &struct {
			TaskID string `json:"task_id"`
		}{}, "line 1, column 13: task_id: must be a string, got a number"},
	} {
		err := json.Unmarshal([]byte(tc.doc), tc.into)
		if err == nil {
			t.Fatalf("%s decoded", tc.doc)
		}
		got := JSON([]byte(tc.doc), err)
		if got != tc.want {
			t.Errorf("JSON(%s) = %q, want %q", tc.doc, got, tc.want)
		}
		if goType.MatchString(got) {
			t.Errorf("JSON(%s) names a Go type: %q", tc.doc, got)
		}
	}
}

func TestWords(t *testing.T) {
	for in, want := range map[string]string{
		"json: cannot unmarshal object into Go value of type []json.RawMessage":                     "must be a list, got an object",
		"json: cannot unmarshal number into Go struct field .task_id of type string":                "task_id: must be a string, got a number",
		"json: cannot unmarshal string into Go struct field Step.depends_on of type []string":       "depends_on: must be a list, got a string",
		"toml: cannot decode TOML string into struct field config.RunnerConfig.Workers of type int": "must be an integer, got a TOML string",
		"toml: cannot decode TOML integer into struct field config.Sandbox.Default of type string":  "must be a string, got a TOML integer",
	} {
		if got := Words(in); got != want {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTOML(t *testing.T) {
	var v struct {
		Runner struct {
			Workers int `toml:"workers"`
		} `toml:"runner"`
	}
	err := toml.Unmarshal([]byte("[runner]\nworkers = \"x\"\n"), &v)
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v", err)
	}
	if got := TOML(err); goType.MatchString(got) || got == "" {
		t.Errorf("TOML = %q", got)
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd")
	for off, want := range map[int64][2]int{0: {1, 1}, 2: {1, 3}, 3: {2, 1}, 99: {2, 3}, -1: {1, 1}} {
		if l, c := LineCol(data, off); l != want[0] || c != want[1] {
			t.Errorf("LineCol(%d) = %d,%d want %v", off, l, c, want)
		}
	}
}
