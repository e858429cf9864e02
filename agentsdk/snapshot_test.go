package agentsdk_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentenv/agentenv/agentsdk"
	"github.com/agentenv/agentenv/agentsdk/agentsdktest"
	"github.com/agentenv/agentenv/protocol"
)

// snapAgent remembers the last prompt of each context.
type snapAgent struct {
	mu   sync.Mutex
	last map[string]string
}

func (a *snapAgent) Run(_ context.Context, t *agentsdk.Task) (*agentsdk.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.last[t.ContextID]
	a.last[t.ContextID] = t.Text()
	return agentsdk.Text("previous: " + prev), nil
}

func (a *snapAgent) SaveSnapshot(_ context.Context, id string) (*agentsdk.Snapshot, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p, ok := a.last[id]
	if !ok {
		return nil, agentsdk.ErrUnknownContext
	}
	return &agentsdk.Snapshot{Trajectory: []byte(fmt.Sprintf("%q", p))}, nil
}

func (a *snapAgent) LoadSnapshot(_ context.Context, s *agentsdk.Snapshot, target string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if target == "" {
		target = "restored"
	}
	a.last[target] = strings.Trim(string(s.Trajectory), `"`)
	return target, nil
}

// objectStore is a loopback stand-in for granted object URLs.
type objectStore struct {
	mu   sync.Mutex
	objs map[string][]byte
}

func (o *objectStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Sig") != "s3cret" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		o.objs[r.URL.Path] = b
	case http.MethodGet:
		b, ok := o.objs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}
}

// TestSnapshotExtension: an agent implementing Snapshotter advertises
// urn:agentenv:snapshot/v1; save uploads through the write grant (its
// headers sent, the answer giving size and digest), load downloads
// through the read grant (size and digest checked) and restores into a
// context that the next turn continues.
func TestSnapshotExtension(t *testing.T) {
	ag := &snapAgent{last: map[string]string{}}
	a := agentsdktest.Start(t, &agentsdk.Card{Name: "snap"}, &agentsdk.Options{Agent: ag, Logger: quiet()})
	store := &objectStore{objs: map[string][]byte{}}
	os := httptest.NewServer(store)
	defer os.Close()
	ctx := context.Background()

	st, card, err := a.Client.Ext(ctx, http.MethodGet, protocol.LegacyAgentCardPath, nil)
	if err != nil || st != 200 || !strings.Contains(string(card), protocol.URISnapshot) {
		t.Fatalf("card %d %v: %s", st, err, card)
	}
	if _, err := a.Client.Prompt(ctx, "c1", "hello"); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	save := `{"context_id":"c1","objects":{"trajectory":{"media_type":"application/json","max_bytes":1000,
	  "write":{"kind":"http-put","url":"` + os.URL + `/t.json","expires_at":"` + exp + `","headers":{"X-Sig":"s3cret"}}}}}`
	st, body, err := a.Client.Ext(ctx, http.MethodPost, protocol.AgentSnapshotPath, rawJSON(save))
	sum := sha256.Sum256([]byte(`"hello"`))
	want := `{"context_id":"c1","objects":{"trajectory":{"size_bytes":7,"sha256":"` + hex.EncodeToString(sum[:]) + `"}}}`
	if err != nil || st != 200 || strings.TrimSpace(string(body)) != want {
		t.Fatalf("save %d %v: %s", st, err, body)
	}
	load := `{"objects":{"trajectory":{"media_type":"application/json","max_bytes":1000,"size_bytes":7,"sha256":"` + hex.EncodeToString(sum[:]) + `",
	  "read":{"kind":"http-get","url":"` + os.URL + `/t.json","expires_at":"` + exp + `"}}}}`
	st, body, err = a.Client.Ext(ctx, http.MethodPut, protocol.AgentSnapshotPath, rawJSON(load))
	if err != nil || st != 200 || strings.TrimSpace(string(body)) != `{"context_id":"restored"}` {
		t.Fatalf("load %d %v: %s", st, err, body)
	}
	task, err := a.Client.Prompt(ctx, "restored", "again")
	if err != nil || task.Text() != "previous: hello" {
		t.Fatalf("resumed turn %v: %q", err, task.Text())
	}

	for name, c := range map[string]struct {
		method, body string
		status       int
		msg          string
	}{
		"unknown context": {http.MethodPost, strings.Replace(save, `"c1"`, `"nope"`, 1), 404, "unknown context_id"},
		"legacy s3":       {http.MethodPost, `{"context_id":"c1","s3_prefix":"s3://b/p"}`, 400, "s3_prefix"},
		"no trajectory":   {http.MethodPost, `{"context_id":"c1","objects":{}}`, 400, "objects.trajectory: required"},
		"plain http":      {http.MethodPost, strings.Replace(save, os.URL, "http://example.com", 1), 400, "objects.trajectory.write.url"},
		"wrong kind":      {http.MethodPost, strings.Replace(save, "http-put", "http-get", 1), 400, "objects.trajectory.write.kind"},
		"too small":       {http.MethodPost, strings.Replace(save, `"max_bytes":1000`, `"max_bytes":3`, 1), 502, "exceed max_bytes"},
		"bad digest":      {http.MethodPut, strings.Replace(load, hex.EncodeToString(sum[:]), strings.Repeat("0", 64), 1), 502, "integrity_mismatch"},
		"wrong size":      {http.MethodPut, strings.Replace(load, `"size_bytes":7`, `"size_bytes":6`, 1), 502, "integrity_mismatch"},
	} {
		st, body, err := a.Client.Ext(ctx, c.method, protocol.AgentSnapshotPath, rawJSON(c.body))
		if err != nil || st != c.status || !strings.Contains(string(body), c.msg) || strings.Contains(string(body), "s3cret") {
			t.Errorf("%s: %d %v %s", name, st, err, body)
		}
	}
}

// rawJSON sends a literal JSON body through Client.Ext.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }
