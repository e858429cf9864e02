package email_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/envsdk/envclient"
	"github.com/agentenv/agentenv/envsdk/envsdktest"
	"github.com/agentenv/agentenv/examples/envs/email"
	"github.com/agentenv/agentenv/protocol"
)

const seedA = `{"messages":[{"id":"a1","from":"boss@example.com","to":["me@example.com"],"subject":"Quarterly report","body":"Please send the Q3 numbers.","sent_at":"2026-02-27T10:00:00Z"}]}`
const seedB = `{"messages":[{"id":"b1","from":"ann@example.com","to":["me@example.com"],"subject":"Lunch?","body":"Tacos at noon","sent_at":"2026-02-28T11:00:00Z"}]}`
const seedC = `{"messages":[{"from":"ci@example.com","to":["me@example.com"],"subject":"Build failed","body":"main is red","sent_at":"2026-02-26T08:00:00Z"}]}`
const seedD = `{"messages":[{"id":"d1","from":"news@example.com","to":["me@example.com"],"subject":"Weekly digest","body":"...","sent_at":"2026-02-25T08:00:00Z"}]}`

func start(t *testing.T) (*envsdktest.Env, *envclient.Client) {
	s, _ := email.New(&envsdk.Options{Getenv: func(string) string { return "" }})
	env := envsdktest.Start(t, s)
	return env, envclient.New(env.BaseURL, nil)
}

func TestSeedAllFormsAndExport(t *testing.T) {
	env, c := start(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "seed.json")
	if err := os.WriteFile(path, []byte(seedC), 0o644); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(seedD)) }))
	defer web.Close()
	parts := []protocol.Part{
		protocol.DataPart(json.RawMessage(seedA)),
		protocol.FilePart(protocol.FileContent{Bytes: []byte(seedB), MimeType: "application/json", Name: "b.json"}),
		protocol.FilePart(protocol.FileContent{URI: "file://" + path, Name: "seed.json"}),
		protocol.FilePart(protocol.FileContent{URI: web.URL + "/seed.json"}),
		protocol.TextPart("ignored"),
	}
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.AddData(ctx, parts); err != nil {
		t.Fatal(err)
	}
	res := env.Call(t, "email_list_messages", map[string]any{})
	var list email.Summaries
	_ = json.Unmarshal(res.Structured, &list)
	var ids []string
	for _, m := range list.Messages {
		ids = append(ids, m.ID)
	}
	if res.IsError || strings.Join(ids, ",") != "b1,a1,m1,d1" {
		t.Fatalf("list = %s (%s)", ids, res.Text)
	}

	// data/get exports what data/add reads: reset + re-add restores it.
	exported, err := c.GetData(ctx, nil)
	if err != nil || len(exported) != 1 {
		t.Fatalf("export %v %v", exported, err)
	}
	if err := c.ResetData(ctx); err != nil {
		t.Fatal(err)
	}
	empty, _ := c.GetData(ctx, nil)
	if string(empty[0].Data) != `{"messages":[]}` {
		t.Fatalf("after reset %s", empty[0].Data)
	}
	if err := c.AddData(ctx, exported); err != nil {
		t.Fatal(err)
	}
	again, _ := c.GetData(ctx, nil)
	if string(again[0].Data) != string(exported[0].Data) {
		t.Fatalf("round trip:\n%s\n%s", exported[0].Data, again[0].Data)
	}

	// A bad seed fails with the reference's handler error and leaves state alone.
	err = c.AddData(ctx, []protocol.Part{protocol.FilePart(protocol.FileContent{Bytes: []byte("{not json")})})
	if !errorsIs(err, protocol.CodeServerError) || !strings.Contains(err.Error(), "seed is not valid JSON") {
		t.Fatalf("bad seed: %v", err)
	}
	err = c.AddData(ctx, []protocol.Part{protocol.FilePart(protocol.FileContent{URI: "file:///does/not/exist.json"})})
	if !errorsIs(err, protocol.CodeServerError) {
		t.Fatalf("missing file: %v", err)
	}
	after, _ := c.GetData(ctx, nil)
	if string(after[0].Data) != string(exported[0].Data) {
		t.Fatal("failed add changed state")
	}
}

func errorsIs(err error, code int64) bool {
	pe, ok := err.(*protocol.Error)
	return ok && pe.Code == code
}

func TestToolsSearchReadSendWithVirtualTime(t *testing.T) {
	env, c := start(t)
	ctx := context.Background()
	if err := c.AddData(ctx, []protocol.Part{protocol.DataPart(json.RawMessage(seedA)), protocol.DataPart(json.RawMessage(seedB))}); err != nil {
		t.Fatal(err)
	}
	res := env.Call(t, "email_search", map[string]any{"query": "TACOS"})
	if res.IsError || !strings.Contains(res.Text, `"id":"b1"`) || strings.Contains(res.Text, "a1") {
		t.Fatalf("search = %+v", res)
	}
	if res := env.Call(t, "email_search", map[string]any{"query": " "}); !res.IsError {
		t.Fatal("empty query accepted")
	}
	res = env.Call(t, "email_read_message", map[string]any{"id": "a1"})
	if res.IsError || !strings.Contains(res.Text, "Q3 numbers") {
		t.Fatalf("read = %+v", res)
	}
	res = env.Call(t, "email_list_messages", map[string]any{"unread_only": true})
	if res.IsError || strings.Contains(res.Text, "a1") || !strings.Contains(res.Text, "b1") {
		t.Fatalf("unread = %+v", res)
	}
	if res := env.Call(t, "email_read_message", map[string]any{"id": "zz"}); !res.IsError || res.Text != `no message with id "zz"` {
		t.Fatalf("missing id = %+v", res)
	}

	// Sync to a gateway clock, then send: the message carries virtual time.
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"virtual_time":"2031-01-02T03:04:05Z"}`))
	}))
	defer gw.Close()
	card, _ := c.GetCard(ctx)
	if _, err := c.InvokeExtension(ctx, card, protocol.URIClock, map[string]any{"env_get_time_url": gw.URL + "/clock/time"}, ""); err != nil {
		t.Fatal(err)
	}
	res = env.Call(t, "email_send_message", map[string]any{"to": []string{"boss@example.com"}, "subject": "Re: Quarterly report", "body": "Attached."})
	if res.IsError || !strings.Contains(res.Text, `"sent_at":"2031-01-02T03:04:05Z"`) || !strings.Contains(res.Text, `"folder":"sent"`) {
		t.Fatalf("send = %+v", res)
	}
	res = env.Call(t, "email_list_messages", map[string]any{"folder": "sent"})
	if res.IsError || !strings.Contains(res.Text, "Re: Quarterly report") {
		t.Fatalf("sent folder = %+v", res)
	}
	if res := env.Call(t, "email_list_messages", map[string]any{"folder": "spam"}); !res.IsError {
		t.Fatal("folder outside the enum accepted")
	}
	if res := env.Call(t, "email_send_message", map[string]any{"to": []string{}, "subject": "s", "body": "b"}); !res.IsError {
		t.Fatal("no recipients accepted")
	}
}

func TestFileBytesAreBase64OnTheWire(t *testing.T) {
	env, _ := start(t)
	body := `{"jsonrpc":"2.0","id":1,"method":"data/add","params":{"parts":[{"kind":"file","file":{"bytes":"` +
		base64.StdEncoding.EncodeToString([]byte(seedB)) + `","mimeType":"application/json"}}]}}`
	resp, err := http.Post(env.DataURL, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if res := env.Call(t, "email_search", map[string]any{"query": "lunch"}); !strings.Contains(res.Text, "b1") {
		t.Fatalf("search after base64 seed = %+v", res)
	}
}
