// Package webmail is the example website of the "browser office": a small
// webmail over the example email env (examples/envs/email). It keeps no
// state of its own: every page reads the mailbox through the email
// server's MCP tools, and the compose form sends through them, so the
// mailbox a task seeds with load_artifact (the email env's
// {"messages":[...]} artifact) is what the browser shows, and what an
// env_outcome_verifier checks afterwards is what the browser sent.
//
// Pages: / (inbox), /sent, /message?id=ID (with a reply form), /compose,
// and POST /send. The email server is found by name in
// AGENTENV_MCP_SERVERS (name=url,... — set by the deployer for every
// website of a multi env), under WEBMAIL_SERVER (default "email").
package webmail

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentenv/agentenv/examples/envs/email"
)

//go:embed pages.html
var pagesFS embed.FS

var pages = template.Must(template.ParseFS(pagesFS, "pages.html"))

// App serves the webmail over the email server at URL, whose tools carry
// the prefix Name + "_" (the email env names its tools after itself).
type App struct {
	URL, Name string

	mu sync.Mutex
	c  *client.Client
}

// Handler returns the webmail's routes.
func (a *App) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { a.folder(w, r, "inbox") })
	mux.HandleFunc("GET /sent", func(w http.ResponseWriter, r *http.Request) { a.folder(w, r, "sent") })
	mux.HandleFunc("GET /message", a.message)
	mux.HandleFunc("GET /compose", func(w http.ResponseWriter, r *http.Request) {
		a.render(w, "compose", map[string]any{"To": r.FormValue("to"), "Subject": r.FormValue("subject")})
	})
	mux.HandleFunc("POST /send", a.send)
	return mux
}

func (a *App) folder(w http.ResponseWriter, r *http.Request, folder string) {
	// The email server's own result types: this app is a front end over
	// its tools.
	var out email.Summaries
	if err := a.call(r.Context(), "list_messages", map[string]any{"folder": folder, "limit": 50}, &out); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	a.render(w, "folder", map[string]any{"Folder": folder, "Messages": out.Messages})
}

func (a *App) message(w http.ResponseWriter, r *http.Request) {
	id := r.FormValue("id")
	if id == "" {
		http.Error(w, "id: required", http.StatusBadRequest)
		return
	}
	var m email.Message
	if err := a.call(r.Context(), "read_message", map[string]any{"id": id}, &m); err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	subject := m.Subject
	if !strings.HasPrefix(strings.ToLower(subject), "re:") {
		subject = "Re: " + subject
	}
	a.render(w, "message", map[string]any{"M": m, "ReplySubject": subject})
}

func (a *App) send(w http.ResponseWriter, r *http.Request) {
	to := strings.FieldsFunc(r.FormValue("to"), func(c rune) bool { return c == ',' || c == ' ' })
	if len(to) == 0 {
		http.Error(w, "to: at least one recipient is required", http.StatusBadRequest)
		return
	}
	var m email.Message
	if err := a.call(r.Context(), "send_message", map[string]any{"to": to, "subject": r.FormValue("subject"), "body": r.FormValue("body")}, &m); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	a.render(w, "sent", map[string]any{"M": m})
}

func (a *App) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pages.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// call runs tool <Name>_<tool> and decodes its structured (or text) result.
func (a *App) call(ctx context.Context, tool string, args map[string]any, out any) error {
	c, err := a.session(ctx)
	if err != nil {
		return err
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: a.Name + "_" + tool, Arguments: args}})
	if err != nil {
		a.mu.Lock()
		a.c = nil // reopen next time
		a.mu.Unlock()
		return fmt.Errorf("%s: %w", tool, err)
	}
	text := ""
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			text += t.Text
		}
	}
	if res.IsError {
		return fmt.Errorf("%s: %s", tool, text)
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return json.Unmarshal(b, out)
	}
	return json.Unmarshal([]byte(text), out)
}

func (a *App) session(ctx context.Context) (*client.Client, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c != nil {
		return a.c, nil
	}
	tr, err := transport.NewStreamableHTTP(a.URL)
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("email server %s: %w", a.URL, err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo: mcp.Implementation{Name: "webmail", Version: "1"}}}); err != nil {
		c.Close()
		return nil, fmt.Errorf("email server %s: initialize: %w", a.URL, err)
	}
	a.c = c
	return c, nil
}

// Close ends the MCP session.
func (a *App) Close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.c != nil {
		a.c.Close()
		a.c = nil
	}
}
