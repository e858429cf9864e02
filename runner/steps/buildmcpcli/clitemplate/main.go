//go:build ignore

// This file is the whole source of every generated env CLI: build_mcp_cli
// writes it next to the env's live tools (tools.json) and compiles the two
// into one static binary. It uses only the standard library, so the build
// needs no module download. Each tool is a subcommand; each property of its
// input schema is a flag of the same name; the call goes to the gateway's
// POST /step route under a role (default "cli").
package main

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed tools.json
var manifestJSON []byte

// manifest is what build_mcp_cli read from the live env.
type manifest struct {
	Env     string `json:"env"`
	Command string `json:"command"`
	Tools   []tool `json:"tools"`
}

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// exit statuses: 0 ok, 1 the call failed or the tool reported an error,
// 2 bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	var m manifest
	if err := json.Unmarshal(manifestJSON, &m); err != nil {
		fmt.Fprintf(stderr, "corrupt tool manifest: %v\n", err)
		return 1
	}
	name := m.Command
	if name == "" {
		name = filepath.Base(os.Args[0])
	}
	g := flag.NewFlagSet(name, flag.ContinueOnError)
	g.SetOutput(stderr)
	url := g.String("url", os.Getenv("AGENTENV_GATEWAY_URL"), "the env's gateway URL (env AGENTENV_GATEWAY_URL)")
	role := g.String("role", envOr("AGENTENV_ROLE", "cli"), "role the calls are made as (env AGENTENV_ROLE)")
	output := g.String("output", "text", "text (the result's text contents) or json (the whole result)")
	g.Usage = func() { usage(stderr, name, &m, g) }
	if err := g.Parse(args); err != nil {
		return 2
	}
	rest := g.Args()
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "list" {
		usage(stdout, name, &m, g)
		if len(rest) == 0 {
			return 2
		}
		return 0
	}
	t := find(&m, rest[0])
	if t == nil {
		fmt.Fprintf(stderr, "%s: unknown command %q (run %s help)\n", name, rest[0], name)
		return 2
	}
	argsJSON, err := parseToolArgs(name, t, rest[1:], stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "%s %s: %v\n", name, t.Name, err)
		}
		return 2
	}
	if *url == "" {
		fmt.Fprintf(stderr, "%s: no gateway URL: give --url or set AGENTENV_GATEWAY_URL\n", name)
		return 2
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "%s: --output must be text or json, got %q\n", name, *output)
		return 2
	}
	res, err := call(*url, *role, t.Name, argsJSON)
	if err != nil {
		fmt.Fprintf(stderr, "%s %s: %v\n", name, t.Name, err)
		return 1
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &r)
	w := stdout
	if r.IsError {
		w = stderr
	}
	if *output == "json" {
		fmt.Fprintln(w, string(res))
	} else {
		for _, c := range r.Content {
			if c.Type == "text" {
				fmt.Fprintln(w, c.Text)
			}
		}
	}
	if r.IsError {
		return 1
	}
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func find(m *manifest, name string) *tool {
	for i := range m.Tools {
		if m.Tools[i].Name == name {
			return &m.Tools[i]
		}
	}
	return nil
}

func usage(w io.Writer, name string, m *manifest, g *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s [--url URL] [--role ROLE] [--output text|json] COMMAND [--PARAM VALUE ...]\n", name)
	if m.Env != "" {
		fmt.Fprintf(w, "Calls the tools of env %s through its gateway.\n", m.Env)
	}
	fmt.Fprintln(w, "\nCommands:")
	for _, t := range m.Tools {
		fmt.Fprintf(w, "  %-32s %s\n", t.Name, firstLine(t.Description))
	}
	fmt.Fprintf(w, "\nRun %s COMMAND --help for its flags.\n\nGlobal flags:\n", name)
	g.SetOutput(w)
	g.PrintDefaults()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// param is one flag: it keeps the raw values and converts them by the
// property's schema type when the arguments are assembled.
type param struct {
	name   string
	schema map[string]any
	vals   []string
	set    bool
}

func (p *param) String() string { return strings.Join(p.vals, ",") }
func (p *param) Set(v string) error {
	p.vals, p.set = append(p.vals, v), true
	return nil
}
func (p *param) IsBoolFlag() bool { return p.schema["type"] == "boolean" }

// parseToolArgs turns a subcommand's flags into the tool's JSON arguments.
// --json '{...}' gives them whole; other flags are added over it.
func parseToolArgs(name string, t *tool, args []string, stderr io.Writer) (json.RawMessage, error) {
	fs := flag.NewFlagSet(name+" "+t.Name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	props, _ := t.Parameters["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	params := map[string]*param{}
	for _, n := range names {
		s, _ := props[n].(map[string]any)
		p := &param{name: n, schema: s}
		params[n] = p
		desc, _ := s["description"].(string)
		if typ := typeOf(s); typ != "" {
			desc = strings.TrimSpace(desc + " (" + typ + ")")
		}
		fs.Var(p, n, desc)
	}
	whole := fs.String("json", "", "all arguments as one JSON object (flags are added over it)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s %s [flags]\n%s\n\nFlags:\n", name, t.Name, t.Description)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (parameters are flags: --name value)", fs.Arg(0))
	}
	out := map[string]any{}
	if *whole != "" {
		if err := json.Unmarshal([]byte(*whole), &out); err != nil {
			return nil, fmt.Errorf("--json: not a JSON object: %v", err)
		}
	}
	for _, n := range names {
		p := params[n]
		if !p.set {
			continue
		}
		v, err := convert(p.schema, p.vals)
		if err != nil {
			return nil, fmt.Errorf("--%s: %v", n, err)
		}
		out[n] = v
	}
	req, _ := t.Parameters["required"].([]any)
	for _, r := range req {
		if n, _ := r.(string); n != "" {
			if _, ok := out[n]; !ok {
				return nil, fmt.Errorf("missing required flag --%s", n)
			}
		}
	}
	return json.Marshal(out)
}

// typeOf is a property's JSON Schema type ("" when it has none or several).
func typeOf(s map[string]any) string {
	t, _ := s["type"].(string)
	return t
}

// convert gives a flag's values the property's type. An array flag may be
// repeated, or given once as a JSON list; objects and untyped properties
// take JSON (an untyped value that is not JSON stays a string).
func convert(s map[string]any, vals []string) (any, error) {
	last := vals[len(vals)-1]
	switch typeOf(s) {
	case "array":
		if len(vals) == 1 && strings.HasPrefix(strings.TrimSpace(last), "[") {
			var l []any
			if err := json.Unmarshal([]byte(last), &l); err != nil {
				return nil, fmt.Errorf("not a JSON list: %v", err)
			}
			return l, nil
		}
		items, _ := s["items"].(map[string]any)
		out := make([]any, 0, len(vals))
		for _, v := range vals {
			c, err := scalar(items, v)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	default:
		return scalar(s, last)
	}
}

func scalar(s map[string]any, v string) (any, error) {
	switch typeOf(s) {
	case "string":
		return v, nil
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", v)
		}
		return n, nil
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", v)
		}
		return f, nil
	case "boolean":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("%q is not true or false", v)
		}
		return b, nil
	case "object":
		var o map[string]any
		if err := json.Unmarshal([]byte(v), &o); err != nil {
			return nil, fmt.Errorf("not a JSON object: %v", err)
		}
		return o, nil
	default:
		var x any
		if json.Unmarshal([]byte(v), &x) == nil {
			return x, nil
		}
		return v, nil
	}
}

// call is POST {url}/step call_tool; it returns the CallToolResult JSON.
func call(url, role, toolName string, args json.RawMessage) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"action": "call_tool", "tool_name": toolName, "arguments": args})
	endpoint := strings.TrimRight(url, "/") + "/step"
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("AgentEnv-Role", role)
	if tok := os.Getenv("AGENTENV_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := &http.Client{Timeout: 11 * time.Minute} // the gateway's own tool timeout is 600 s
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, e.Error)
		}
		return nil, fmt.Errorf("HTTP %d from %s", resp.StatusCode, endpoint)
	}
	return b, nil
}
