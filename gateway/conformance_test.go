package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/protocol"
)

// The conformance corpus (testdata/conformance/*.txtar) pins wire
// behaviour as data. Each file holds:
//
//	# comment naming the reference behaviour it pins
//	-- children.json --   {"<server>": ["<echo tool>", …], …}, in server order
//	-- config.json --     optional: {"prefix":"server","collisions":"fail","websites":{"w":"http://…"}}
//	-- <n>.request --     "<VERB> <path>" | "MCP <method>" | "MCPRAW", then headers, a blank line, the body
//	-- <n>.response --    the status (HTTP or "ok" for MCP), a newline, the expected JSON
//
// Exchanges run in order against one gateway; JSON is compared
// semantically. "MCP" sends a JSON-RPC request with the body as params on
// the session of the role named by an AgentEnv-Role header and expects the
// result; "MCPRAW" posts the body as is on that session. The file
// testdata/conformance/baseline lists cases that are known gaps: they must
// fail (a passing baseline case is an error, so the list only shrinks).

type txtarFile struct {
	comment string
	files   []txtarEntry
}

type txtarEntry struct {
	name string
	data []byte
}

func parseTxtar(b []byte) txtarFile {
	var f txtarFile
	var cur *txtarEntry
	for _, line := range strings.SplitAfter(string(b), "\n") {
		trim := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trim, "-- ") && strings.HasSuffix(trim, " --") && len(trim) > 6 {
			f.files = append(f.files, txtarEntry{name: strings.TrimSpace(trim[3 : len(trim)-3])})
			cur = &f.files[len(f.files)-1]
			continue
		}
		if cur == nil {
			f.comment += line
		} else {
			cur.data = append(cur.data, line...)
		}
	}
	return f
}

func (f txtarFile) get(name string) []byte {
	for _, e := range f.files {
		if e.name == name {
			return e.data
		}
	}
	return nil
}

func readBaseline(t *testing.T) map[string]string {
	b, err := os.ReadFile("testdata/conformance/baseline")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(line, " ")
		out[name] = strings.TrimSpace(reason)
	}
	return out
}

func TestConformance(t *testing.T) {
	paths, _ := filepath.Glob("testdata/conformance/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no conformance cases")
	}
	baseline := readBaseline(t)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".txtar")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			failures := runConformance(t, parseTxtar(raw))
			reason, known := baseline[name]
			switch {
			case known && len(failures) == 0:
				t.Fatalf("baseline gap %q now passes: remove it from testdata/conformance/baseline", name)
			case known:
				t.Logf("known gap (%s): %s", reason, strings.Join(failures, "; "))
			case len(failures) > 0:
				t.Fatalf("%s\n%s", strings.TrimSpace(parseTxtar(raw).comment), strings.Join(failures, "\n"))
			}
		})
	}
	for name := range baseline {
		if _, err := os.Stat(filepath.Join("testdata/conformance", name+".txtar")); err != nil {
			t.Errorf("baseline names a missing case %s", name)
		}
	}
}

type confConfig struct {
	Prefix     PrefixMode        `json:"prefix"`
	Collisions CollisionMode     `json:"collisions"`
	Websites   map[string]string `json:"websites"`
	Name       string            `json:"name"`
}

// runConformance runs one case and returns its failures.
func runConformance(t *testing.T, f txtarFile) []string {
	t.Helper()
	var order []string
	children := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(f.get("children.json")))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			k, _ := dec.Token()
			var tools []string
			if err := dec.Decode(&tools); err != nil {
				t.Fatalf("children.json: %v", err)
			}
			order = append(order, k.(string))
			children[k.(string)] = tools
		}
	}
	var cc confConfig
	if b := f.get("config.json"); len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &cc); err != nil {
			t.Fatalf("config.json: %v", err)
		}
	}
	cfg := &Config{Prefix: cc.Prefix, Collisions: cc.Collisions, Name: cc.Name}
	var names []string
	for k := range cc.Websites {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		cfg.Websites = append(cfg.Websites, Upstream{Key: k, URL: cc.Websites[k]})
	}
	for _, name := range order {
		c := startChild(t, name, &childOpts{tools: nil})
		if len(children[name]) > 0 {
			c.srv.DeleteTools(name + "_echo")
		}
		for _, tool := range children[name] {
			c.srv.AddTools(c.echoTool(tool))
		}
		cfg.Servers = append(cfg.Servers, Server{Name: name, URL: c.URL})
	}
	tg := startGateway(t, cfg, nil, cfg.Collisions == CollisionFail)
	if cfg.Collisions == CollisionFail {
		waitFor(t, "discovery attempt", func() bool {
			_, b := tg.get(t, "/readyz", nil)
			return strings.Contains(string(b), "discovery_error") || strings.Contains(string(b), `"ready":true`)
		})
	}
	clients := map[string]*mcpClient{}
	var failures []string
	for i := 1; ; i++ {
		reqRaw := f.get(strconv.Itoa(i) + ".request")
		if reqRaw == nil {
			break
		}
		want := f.get(strconv.Itoa(i) + ".response")
		status, body := doConformance(t, tg, clients, reqRaw)
		wantStatus, wantBody, _ := strings.Cut(string(want), "\n")
		if strings.TrimSpace(wantStatus) != status || !jsonEqual(wantBody, body) {
			failures = append(failures, "exchange "+strconv.Itoa(i)+": "+firstLine(reqRaw)+
				"\n  got  "+status+" "+strings.TrimSpace(string(body))+"\n  want "+strings.TrimSpace(wantStatus)+" "+strings.TrimSpace(wantBody))
		}
	}
	return failures
}

func firstLine(b []byte) string { l, _, _ := strings.Cut(string(b), "\n"); return l }

func jsonEqual(a string, b []byte) bool {
	var x, y any
	if strings.TrimSpace(a) == "" {
		return len(bytes.TrimSpace(b)) == 0
	}
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal(b, &y) != nil {
		return strings.TrimSpace(a) == strings.TrimSpace(string(b))
	}
	return reflect.DeepEqual(x, y)
}

func doConformance(t *testing.T, tg *testGateway, clients map[string]*mcpClient, raw []byte) (string, []byte) {
	t.Helper()
	rd := bufio.NewReader(bytes.NewReader(raw))
	line, _ := rd.ReadString('\n')
	verb, target, _ := strings.Cut(strings.TrimSpace(line), " ")
	hdr := map[string]string{}
	for {
		h, err := rd.ReadString('\n')
		h = strings.TrimSpace(h)
		if h == "" || err != nil {
			break
		}
		k, v, _ := strings.Cut(h, ":")
		hdr[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	body, _ := io.ReadAll(rd)
	body = bytes.TrimSpace(body)
	switch verb {
	case "MCP", "MCPRAW":
		r := hdr[protocol.HeaderRole]
		mc := clients[r]
		if mc == nil {
			mc = tg.mcpClient(t, r)
			clients[r] = mc
		}
		if verb == "MCP" {
			var params any = map[string]any{}
			if len(body) > 0 {
				params = json.RawMessage(body)
			}
			return "ok", mc.raw(t, target, params)
		}
		req, _ := http.NewRequestWithContext(context.Background(), "POST", tg.URL+"/mcp", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set(protocol.HeaderMCPSessionID, mc.c.GetTransport().GetSessionId())
		req.Header.Set(protocol.HeaderMCPProtocolVersion, "2025-11-25")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strconv.Itoa(resp.StatusCode), b
	default:
		st, b, _ := tg.do(t, verb, target, hdr, string(body))
		return strconv.Itoa(st), b
	}
}
