// Package email is an example inbox environment built with envsdk: agents
// list, search, read and send messages; the runner seeds it through
// data/add (inline JSON, a file with inline bytes, or a file:// or
// https:// URI), exports it with data/get in the same format, and empties
// it with data/reset. Sent messages are stamped with the environment's
// virtual time (envsdk.Now), so a gateway's clock drives them.
//
// Seed and export format: {"messages":[Message, ...]}.
//
// The mailbox owner is a setting (envsdk.AddSetting): a task's
// apply_server_config step calls set_acting_user (URIActingUser) through
// the gateway before the agent runs, so one image serves any persona.
package email

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// Message is one email.
type Message struct {
	ID      string    `json:"id"`
	Folder  string    `json:"folder"` // "inbox" or "sent"
	From    string    `json:"from"`
	To      []string  `json:"to"`
	Subject string    `json:"subject"`
	Body    string    `json:"body"`
	SentAt  time.Time `json:"sent_at"`
	Read    bool      `json:"read"`
}

// Dump is the seed and export document.
type Dump struct {
	Messages []Message `json:"messages"`
}

// Inbox is the environment's state.
type Inbox struct {
	mu     sync.Mutex
	owner  *envsdk.Setting[ActingUser]
	msgs   []Message
	nextID int
}

// URIActingUser is the extension that sets the mailbox owner.
const URIActingUser = "urn:agentenv:set-acting-user/v1"

// ActingUser is set_acting_user's argument.
type ActingUser struct {
	User string `json:"user" description:"Address the mailbox belongs to; sent messages come from it."`
}

// New returns the env server and its inbox, owned by me@example.com until
// set_acting_user names someone else.
func New(opts *envsdk.Options) (*envsdk.Server, *Inbox) {
	in := &Inbox{}
	s := envsdk.New(&protocol.EnvCard{Name: "email"}, opts)
	in.owner = envsdk.AddSetting(s, &envsdk.Extension{URI: URIActingUser, Name: "set_acting_user",
		Description: "Set the mailbox owner (harness only)."}, ActingUser{User: "me@example.com"},
		&envsdk.SettingOptions[ActingUser]{Check: func(_ context.Context, u ActingUser) error {
			if !strings.Contains(u.User, "@") {
				return fmt.Errorf("user %q is not an email address", u.User)
			}
			return nil
		}})
	s.EnableClock()
	s.HandleReset(func(context.Context) error { in.reset(); return nil })
	s.HandleAdd(in.add)
	s.HandleGet(func(context.Context) ([]protocol.Part, error) {
		b, err := json.Marshal(in.dump())
		return []protocol.Part{{Kind: protocol.PartKindData, Data: b}}, err
	})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_list_messages", Description: "List messages in a folder, newest first."}, in.list)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_search", Description: "Search messages by text in subject, body, sender or recipients."}, in.search)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_read_message", Description: "Read one message and mark it as read."}, in.read)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_send_message", Description: "Send a message from the mailbox owner."}, in.send)
	return s, in
}

func (in *Inbox) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.msgs, in.nextID = nil, 0
}

func (in *Inbox) dump() Dump {
	in.mu.Lock()
	defer in.mu.Unlock()
	return Dump{Messages: append([]Message{}, in.msgs...)}
}

// add loads every seed form; text parts are ignored by convention.
func (in *Inbox) add(ctx context.Context, parts []protocol.Part) error {
	for i, p := range parts {
		var raw []byte
		switch {
		case p.Kind == protocol.PartKindData:
			raw = p.Data
		case p.Kind == protocol.PartKindFile && p.File.Bytes != nil:
			raw = p.File.Bytes
		case p.Kind == protocol.PartKindFile:
			b, err := fetch(ctx, p.File.URI)
			if err != nil {
				return fmt.Errorf("part %d: %w", i, err)
			}
			raw = b
		default:
			continue
		}
		var d Dump
		if err := json.Unmarshal(raw, &d); err != nil {
			return fmt.Errorf("part %d: seed is not valid JSON: %w", i, err)
		}
		in.load(d.Messages)
	}
	return nil
}

func (in *Inbox) load(msgs []Message) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, m := range msgs {
		if m.Folder == "" {
			m.Folder = "inbox"
		}
		if m.ID == "" {
			in.nextID++
			m.ID = "m" + strconv.Itoa(in.nextID)
		}
		if i := slices.IndexFunc(in.msgs, func(x Message) bool { return x.ID == m.ID }); i >= 0 {
			in.msgs[i] = m // same id: the seed replaces it
			continue
		}
		in.msgs = append(in.msgs, m)
	}
}

// fetch reads a file:// or https:// seed.
func fetch(ctx context.Context, uri string) ([]byte, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("file uri: %w", err)
	}
	switch u.Scheme {
	case "file":
		return os.ReadFile(u.Path)
	case "https", "http":
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("fetch seed: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("fetch seed: HTTP %d", resp.StatusCode)
		}
		return io.ReadAll(resp.Body)
	}
	return nil, fmt.Errorf("file uri: unsupported scheme %q", u.Scheme)
}

// Summary is a message without its body, as lists show it.
type Summary struct {
	ID      string    `json:"id"`
	From    string    `json:"from"`
	To      []string  `json:"to"`
	Subject string    `json:"subject"`
	SentAt  time.Time `json:"sent_at"`
	Read    bool      `json:"read"`
}

// Summaries is the output of list and search.
type Summaries struct {
	Messages []Summary `json:"messages"`
}

type listIn struct {
	Folder     string `json:"folder" enum:"inbox,sent" default:"inbox" description:"Folder to list."`
	UnreadOnly bool   `json:"unread_only,omitempty" description:"Only unread messages."`
	Limit      int    `json:"limit" default:"20" description:"Maximum number of messages."`
}

func (in *Inbox) list(_ context.Context, _ *envsdk.Request, a listIn) (Summaries, error) {
	return in.pick(a.Limit, func(m Message) bool { return m.Folder == a.Folder && (!a.UnreadOnly || !m.Read) }), nil
}

type searchIn struct {
	Query string `json:"query" description:"Text to look for (case-insensitive)."`
	Limit int    `json:"limit" default:"20" description:"Maximum number of messages."`
}

func (in *Inbox) search(_ context.Context, _ *envsdk.Request, a searchIn) (Summaries, error) {
	q := strings.ToLower(strings.TrimSpace(a.Query))
	if q == "" {
		return Summaries{}, errors.New("query must not be empty")
	}
	return in.pick(a.Limit, func(m Message) bool {
		hay := strings.ToLower(strings.Join(append([]string{m.Subject, m.Body, m.From}, m.To...), "\n"))
		return strings.Contains(hay, q)
	}), nil
}

// pick returns matching messages, newest first.
func (in *Inbox) pick(limit int, keep func(Message) bool) Summaries {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := Summaries{Messages: []Summary{}}
	for _, m := range in.msgs {
		if keep(m) {
			out.Messages = append(out.Messages, Summary{m.ID, m.From, m.To, m.Subject, m.SentAt, m.Read})
		}
	}
	slices.SortStableFunc(out.Messages, func(a, b Summary) int { return b.SentAt.Compare(a.SentAt) })
	if limit > 0 && len(out.Messages) > limit {
		out.Messages = out.Messages[:limit]
	}
	return out
}

type readIn struct {
	ID string `json:"id" description:"Message id."`
}

func (in *Inbox) read(_ context.Context, _ *envsdk.Request, a readIn) (Message, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for i := range in.msgs {
		if in.msgs[i].ID == a.ID {
			in.msgs[i].Read = true
			return in.msgs[i], nil
		}
	}
	return Message{}, fmt.Errorf("no message with id %q", a.ID)
}

type sendIn struct {
	To      []string `json:"to" description:"Recipient addresses."`
	Subject string   `json:"subject" description:"Subject line."`
	Body    string   `json:"body" description:"Message text."`
}

func (in *Inbox) send(ctx context.Context, _ *envsdk.Request, a sendIn) (Message, error) {
	if len(a.To) == 0 {
		return Message{}, errors.New("to: at least one recipient is required")
	}
	now, err := envsdk.Now(ctx)
	if err != nil {
		return Message{}, fmt.Errorf("cannot read the clock: %w", err)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.nextID++
	m := Message{ID: "m" + strconv.Itoa(in.nextID), Folder: "sent", From: in.owner.Get().User, To: a.To,
		Subject: a.Subject, Body: a.Body, SentAt: now, Read: true}
	in.msgs = append(in.msgs, m)
	return m, nil
}
