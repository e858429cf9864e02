package didyoumean

import "testing"

func TestClosest(t *testing.T) {
	types := []string{"call_tool", "deploy_sandbox", "verify_sandbox", "load_artifact"}
	for _, tc := range []struct{ name, want string }{
		{"deploy_sandbx", "deploy_sandbox"},
		{"DEPLOY_SANDBOX", "deploy_sandbox"},
		{"verfy_sandbox", "verify_sandbox"},
		{"nothing_like_it", ""},
		{"", ""},
	} {
		if got := Closest(tc.name, types); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Closest("helo", []string{"hello", "office"}); got != "hello" {
		t.Errorf("Closest(helo) = %q", got)
	}
}

func TestSuffix(t *testing.T) {
	got := Suffix("defualt", []string{"default", "agent_default"})
	want := `; did you mean "default"? (known: agent_default, default)`
	if got != want {
		t.Errorf("Suffix = %q, want %q", got, want)
	}
	if got := Suffix("zzzzzzzz", []string{"b", "a"}); got != " (known: a, b)" {
		t.Errorf("Suffix without a close name = %q", got)
	}
	if got := Known(nil); got != "" {
		t.Errorf("Known(nil) = %q", got)
	}
}
