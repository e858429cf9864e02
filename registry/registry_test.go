package registry_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

func TestParseRef(t *testing.T) {
	good := map[string]registry.Ref{
		"hello":                         {ID: "hello"},
		"hello:2":                       {ID: "hello", Version: 2},
		"hello:latest":                  {ID: "hello"},
		"@local/agentenv-framework/x:3": {ID: "@local/agentenv-framework/x", Version: 3},
		"a b/c (d)+e,f&g~h.i_j-k@l":     {ID: "a b/c (d)+e,f&g~h.i_j-k@l"},
	}
	for in, want := range good {
		got, err := registry.ParseRef(in)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if err == nil && want.Version > 0 && got.String() != strings.TrimSuffix(in, ":latest") {
			t.Errorf("String() = %q", got.String())
		}
	}
	for _, in := range []string{"", ":1", "a:", "a:0", "a:-1", "a:+1", "a:1.5", "a:x", "a:1:2", "@x/y", "local/x", "a/../b", "a\tb"} {
		_, err := registry.ParseRef(in)
		var ie *registry.InvalidError
		if !errors.Is(err, registry.ErrInvalid) || !errors.As(err, &ie) || ie.Field != "ref" {
			t.Errorf("ParseRef(%q) = %v, want an invalid ref error", in, err)
		} else if in != "" && !strings.Contains(err.Error(), strconv.Quote(in)) {
			t.Errorf("ParseRef(%q) message %q does not name the input", in, err)
		}
	}
}

func TestIDSegmentAndRepository(t *testing.T) {
	if got := registry.IDSegment("slack-universe-data"); got != "slack-universe-data" {
		t.Errorf("bare id segment = %s", got)
	}
	a := registry.IDSegment("@local/agentenv-framework/hello/greeting")
	b := registry.IDSegment("@local/agentenv-framework/hello-greeting")
	if !strings.HasPrefix(a, "local/agentenv-framework-hello-greeting-") || len(a) != len("local/agentenv-framework-hello-greeting-")+12 || a == b {
		t.Errorf("local segments %s / %s", a, b)
	}
	if got := registry.ArtifactKey("fix", "file", "x", 2, "d/y.json"); got != "fix/artifacts/file/x/2/d/y.json" {
		t.Errorf("ArtifactKey = %s", got)
	}
	for _, ok := range []string{"items__env_image", "a2a-agent-a2a-default", "a/b.c", "a--b"} {
		if !registry.ValidRepository(ok) || registry.RepositoryName(ok) != ok {
			t.Errorf("%s should be a valid repository kept as is", ok)
		}
	}
	for _, bad := range []string{"", "A", "a_", "_a", "a___b", "a..b", "a//b", "a b", "@local/x"} {
		if registry.ValidRepository(bad) {
			t.Errorf("%q should be invalid", bad)
		}
		if r := registry.RepositoryName(bad); !registry.ValidRepository(r) {
			t.Errorf("RepositoryName(%q) = %q is invalid", bad, r)
		}
	}
}

func TestNewInstanceID(t *testing.T) {
	id := registry.NewInstanceID("@local/agentenv-framework/hello/hello")
	suffix := strings.TrimPrefix(id, "@local/agentenv-framework/hello/hello-")
	if len(suffix) != 8 || strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		t.Fatalf("instance id %s", id)
	}
	if registry.NewInstanceID("x") == registry.NewInstanceID("x") {
		t.Fatal("two instance ids collide")
	}
}

func TestCollections(t *testing.T) {
	for _, c := range registry.Collections() {
		if !c.Known() {
			t.Errorf("%s not known", c)
		}
		if (c.CheckVersioned() == nil) == (c.CheckRecords() == nil) {
			t.Errorf("%s is both or neither kind", c)
		}
	}
	if registry.TaskInstances.KeyField() != "instance_id" || registry.Runs.KeyField() != "run_id" {
		t.Error("key fields")
	}
	if err := registry.Collection("docs; DROP TABLE x").CheckVersioned(); !errors.Is(err, registry.ErrInvalid) {
		t.Errorf("unknown collection: %v", err)
	}
}
