package agentsdk_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/protocol"
)

func fuzzServer(f *testing.F) *agentsdk.Server {
	s, err := agentsdk.New(&agentsdk.Card{Name: "fuzz"}, &agentsdk.Options{Agent: echoAgent(), Logger: quiet()})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = s.Close() })
	return s
}

// FuzzA2AEndpoint: any body posted to /a2a gets HTTP 200 with one
// JSON-RPC response object (result or error), never a panic or a 5xx.
// Run longer with: go test -run '^$' -fuzz FuzzA2AEndpoint ./agentsdk/
func FuzzA2AEndpoint(f *testing.F) {
	s := fuzzServer(f)
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]},"configuration":{"blocking":true}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"data","data":{"n":12345678901234567890}}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"id":"nope"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":""}}`,
		`{"jsonrpc":"2.0","id":4,"method":"message/stream","params":{}}`,
		`{"jsonrpc":"2.0","method":"x"}`, `[]`, `null`, `{`, ``, `{"jsonrpc":"2.0","id":{},"method":7}`,
		`{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"file","file":{"bytes":"!!"}}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/a2a", bytes.NewReader(body)))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var resp struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.JSONRPC != "2.0" || (resp.Result == nil && resp.Error == nil) {
			t.Fatalf("response %q for %q", rec.Body.String(), body)
		}
		if resp.Error != nil && resp.Error.Code == protocol.CodeInternalError {
			t.Fatalf("internal error for %q: %s", body, rec.Body.String())
		}
	})
}

// FuzzExtensionBodies: any body to a POST extension is answered 2xx or
// 4xx, never 5xx, and never echoes a secret it carried.
func FuzzExtensionBodies(f *testing.F) {
	s := fuzzServer(f)
	paths := []string{protocol.AgentMCPConfigPath, protocol.AgentConfigPath, protocol.AgentTrajectoryPath, protocol.AgentPeerAgentsPath, protocol.AgentSkillConfigPath}
	for i, seed := range []string{
		`{"url":"http://x","headers":{"Authorization":"Bearer SECRET"}}`, `{"role":"SECRET"}`, `{"task_id":"t","after":0}`,
		`{"peers":[{"name":"a","url":"http://a"}]}`, `{"name":"s","description":"d","skill_md":"SECRET"}`,
		`{"timeout_seconds":1e400}`, `{"context_id":"c","after":99999999999999999999}`, `{"name":"SECRET","description":7}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, paths[int(which)%len(paths)], bytes.NewReader(body)))
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
		if rec.Code >= 400 && strings.Contains(rec.Body.String(), "SECRET") {
			t.Fatalf("echoed input: %s", rec.Body.String())
		}
	})
}
