package redact_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry/redact"
)

const key = "sk-live-1234567890"

func TestStripJSON(t *testing.T) {
	in := `{"metadata":{"user_overrides":{"litellm_api_key":"` + key + `","agent_model":"m"}},
	"list":[{"judge_litellm_api_key":"` + key + `","n":12345678901234567890}],"remote_tokens":{"a":"` + key + `"},
	"usersim_api_key":"` + key + `","cf_access_client_secret":"` + key + `","api_key_name":"kept"}`
	out, err := redact.StripJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), key) {
		t.Fatalf("secret left: %s", out)
	}
	for _, keep := range []string{`"agent_model":"m"`, `12345678901234567890`, `"api_key_name":"kept"`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("lost %s: %s", keep, out)
		}
	}
	// Escaped key spellings are caught too.
	esc := `{"\u006citellm_api_key":"` + key + `"}`
	if out, _ := redact.StripJSON([]byte(esc)); strings.Contains(string(out), key) {
		t.Fatalf("escaped key not stripped: %s", out)
	}
	plain := []byte(`{"a":1}`)
	if out, _ := redact.StripJSON(plain); !bytes.Equal(out, plain) {
		t.Fatalf("unchanged input rewritten: %s", out)
	}
	if _, err := redact.StripJSON([]byte(`{"litellm_api_key":`)); err == nil {
		t.Fatal("malformed JSON accepted")
	}
}

func TestMask(t *testing.T) {
	cases := map[[2]string]string{
		{"api_key", key}:                              redact.Masked,
		{"password", "hunter2"}:                       redact.Masked,
		{"GITHUB_TOKEN", "ghp_x"}:                     redact.Masked,
		{"api_key", "env:LITELLM_API_KEY"}:            "env:LITELLM_API_KEY",
		{"api_key", "secret:KEY?dflt"}:                "secret:KEY?dflt",
		{"api_key", ""}:                               "",
		{"base_url", "http://u:pw@host:4000/v1"}:      "http://u:****@host:4000/v1",
		{"dsn", "host=h user=u password=pw dbname=d"}: "host=h user=u password=**** dbname=d",
		{"base_url", "http://host:4000/v1"}:           "http://host:4000/v1",
		{"default", "claude-sonnet-4-6"}:              "claude-sonnet-4-6",
	}
	for in, want := range cases {
		if got := redact.MaskValue(in[0], in[1]); got != want {
			t.Errorf("MaskValue(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
	var v any
	_ = json.Unmarshal([]byte(`{"model":{"api_key":"`+key+`","base_url":"https://a:b@x"},"litellm_api_key":"`+key+`","n":[{"token":"t"}]}`), &v)
	b, _ := json.Marshal(redact.Mask(v))
	if strings.Contains(string(b), key) || strings.Contains(string(b), `"t"`) || strings.Contains(string(b), ":b@") {
		t.Fatalf("Mask left secrets: %s", b)
	}
}

func TestReplaceAttr(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))
	log.Info("calling model", "api_key", key, "url", "http://u:"+key+"@h/", "bearer", 918273645, "model", "m")
	if strings.Contains(buf.String(), key) || strings.Contains(buf.String(), "918273645") || !strings.Contains(buf.String(), `"bearer":"****"`) || !strings.Contains(buf.String(), `"model":"m"`) {
		t.Fatalf("log line: %s", buf.String())
	}
}
