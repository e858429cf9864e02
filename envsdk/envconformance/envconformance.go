// Package envconformance is the shared wire-contract suite for anything
// that serves the environment protocol: envsdk servers, a gateway's env
// face, or a reference (Python) env reached over HTTP. It checks the card
// shape and the data-plane transport rules (docs/protocol.md)
// without side effects (it never resets, adds or reads data), so it can
// run against a loaded env.
//
//	func TestConformance(t *testing.T) {
//		env := envsdktest.Start(t, myenv.New())
//		envconformance.Run(t, env.BaseURL) // or Check(base) for the list of problems
//	}
package envconformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/protocol"
)

// Run checks the env served at base (no trailing slash) and reports each
// problem as a test error.
func Run(t testing.TB, base string) {
	t.Helper()
	for _, p := range Check(base) {
		t.Error(p)
	}
}

// Check returns the problems found with the env at base; none means it
// conforms.
func Check(base string) []string { return CheckWith(base, nil) }

// CheckWith is Check sending its requests through hc (nil means
// http.DefaultClient): a caller reaching the env through a gateway that
// wants a credential gives a client whose transport adds it.
func CheckWith(base string, hc *http.Client) []string {
	if hc == nil {
		hc = http.DefaultClient
	}
	r := &report{hc: hc}
	base = strings.TrimRight(base, "/")
	raw, ok := fetchCard(r, base)
	if !ok {
		return r.problems
	}
	var card protocol.EnvCard
	if err := json.Unmarshal(raw, &card); err != nil {
		r.errorf("card does not decode: %v", err)
		return r.problems
	}
	checkCard(r, raw)
	checkDataPlane(r, base+"/"+strings.TrimLeft(card.DataPlaneURL(), "/"), &card)
	return r.problems
}

type report struct {
	hc       *http.Client
	problems []string
}

func (r *report) errorf(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func fetchCard(r *report, base string) ([]byte, bool) {
	resp, err := r.hc.Get(base + protocol.EnvCardPath)
	if err != nil {
		r.errorf("GET card: %v", err)
		return nil, false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		r.errorf("GET card: status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		return nil, false
	}
	return b, true
}

// checkCard: every optional key present (null when unset), as served by
// the reference.
func checkCard(r *report, raw []byte) {
	var c map[string]json.RawMessage
	if err := json.Unmarshal(raw, &c); err != nil {
		r.errorf("card is not an object: %v", err)
		return
	}
	for _, k := range []string{"name", "protocolVersion", "url", "preferredTransport", "additionalInterfaces", "capabilities", "children_environments"} {
		if _, ok := c[k]; !ok {
			r.errorf("card key %q missing (nulls must be included)", k)
		}
	}
	var caps map[string]json.RawMessage
	if err := json.Unmarshal(c["capabilities"], &caps); err != nil || caps == nil {
		r.errorf("capabilities is not an object: %s", c["capabilities"])
		return
	}
	for _, k := range []string{"extensions", "tools", "operations"} {
		if _, ok := caps[k]; !ok {
			r.errorf("capabilities.%s missing (nulls must be included)", k)
		}
	}
	var exts []map[string]json.RawMessage
	_ = json.Unmarshal(caps["extensions"], &exts)
	for i, e := range exts {
		for _, k := range []string{"uri", "description", "params", "required"} {
			if _, ok := e[k]; !ok {
				r.errorf("capabilities.extensions[%d].%s missing", i, k)
			}
		}
	}
	var ops []string
	if err := json.Unmarshal(caps["operations"], &ops); err != nil {
		r.errorf("capabilities.operations: %v", err)
	}
	order := protocol.DataPlaneMethods[:]
	last := -1
	for _, op := range ops {
		i := slices.Index(order, op)
		if i < 0 || i <= last {
			r.errorf("capabilities.operations %v: want a subset of %v in that order", ops, order)
			break
		}
		last = i
	}
}

type rpcCase struct {
	name, body, id string
	code           int64
	message        string
}

func checkDataPlane(r *report, url string, card *protocol.EnvCard) {
	unknown := "agentenv.conformance/unknown"
	cases := []rpcCase{
		{"not JSON", `{"jsonrpc":`, `null`, protocol.CodeParseError, "parse error"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"` + unknown + `"}]`, `null`, protocol.CodeInvalidRequest, "invalid request"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":2,"method":"` + unknown + `"}`, `2`, protocol.CodeInvalidRequest, "invalid request"},
		{"no method", `{"jsonrpc":"2.0","id":3}`, `3`, protocol.CodeInvalidRequest, "invalid request"},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"` + unknown + `"}`, `4`, protocol.CodeMethodNotFound, "method not found: " + unknown},
		{"string id", `{"jsonrpc":"2.0","id":"x-1","method":"` + unknown + `"}`, `"x-1"`, protocol.CodeMethodNotFound, ""},
		{"negative fractional id", `{"jsonrpc":"2.0","id":-1.5,"method":"` + unknown + `"}`, `-1.5`, protocol.CodeMethodNotFound, ""},
		{"notification answered", `{"jsonrpc":"2.0","method":"` + unknown + `"}`, `null`, protocol.CodeMethodNotFound, ""},
	}
	// The side-effect-free probe: data/add with no parts.
	probe := rpcCase{name: "data/add probe", body: `{"jsonrpc":"2.0","id":5,"method":"data/add","params":{"parts":[]}}`, id: `5`}
	if card.SupportsOperation(protocol.MethodDataAdd) {
		probe.code, probe.message = protocol.CodeInvalidParams, "invalid_request"
	} else {
		probe.code, probe.message = protocol.CodeMethodNotFound, "method not found: data/add"
	}
	cases = append(cases, probe)
	for _, m := range []string{protocol.MethodDataReset, protocol.MethodDataGet} {
		if !card.SupportsOperation(m) {
			cases = append(cases, rpcCase{"unregistered " + m, `{"jsonrpc":"2.0","id":6,"method":"` + m + `"}`, `6`, protocol.CodeMethodNotFound, "method not found: " + m})
		}
	}
	for _, c := range cases {
		checkRPC(r, url, c)
	}
	resp, err := r.hc.Get(url)
	if err != nil {
		r.errorf("GET data plane: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		r.errorf("GET data plane: %d, want 405", resp.StatusCode)
	}
}

func checkRPC(r *report, url string, c rpcCase) {
	resp, err := r.hc.Post(url, "application/json", bytes.NewReader([]byte(c.body)))
	if err != nil {
		r.errorf("%s: %v", c.name, err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		r.errorf("%s: status %d, type %q (every answer is HTTP 200 JSON): %s", c.name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		return
	}
	var out struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *protocol.Error `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.JSONRPC != "2.0" || out.Error == nil {
		r.errorf("%s: want a JSON-RPC 2.0 error, got %s", c.name, b)
		return
	}
	if string(out.ID) != c.id {
		r.errorf("%s: id %s, want %s echoed verbatim", c.name, out.ID, c.id)
	}
	if out.Error.Code != c.code || (c.message != "" && out.Error.Message != c.message) {
		r.errorf("%s: error %d %q, want %d %q", c.name, out.Error.Code, out.Error.Message, c.code, c.message)
	}
}
