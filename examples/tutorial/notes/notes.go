// Package notes is the tutorial's environment: a notebook an agent can
// add notes to and list. It has two tools and the full data plane, so a
// task can seed it, an agent can use it and a verifier can read it back.
package notes

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentenv/agentenv/envsdk"
	"github.com/agentenv/agentenv/protocol"
)

// AddIn is the input of the add tool; the jsonschema tag becomes the
// argument's description in the tool's schema.
type AddIn struct {
	Text string `json:"text" jsonschema:"the note to keep"`
}

// AddOut is what the add tool answers.
type AddOut struct {
	Count int `json:"count"`
}

// ListOut is what the list tool answers.
type ListOut struct {
	Notes []string `json:"notes"`
}

// New returns the notes env server. Tools are named
// "{environment_name}_add" and "{environment_name}_list": the server's
// name ("notes", or $ENVIRONMENT_NAME) replaces the placeholder.
func New(opts *envsdk.Options) *envsdk.Server {
	s := envsdk.New(&protocol.EnvCard{Name: "notes"}, opts)
	var (
		mu    sync.Mutex
		notes = []string{}
	)
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_add", Description: "Add a note."},
		func(ctx context.Context, _ *envsdk.Request, in AddIn) (AddOut, error) {
			mu.Lock()
			defer mu.Unlock()
			notes = append(notes, in.Text)
			return AddOut{Count: len(notes)}, nil
		})
	envsdk.AddTool(s, &envsdk.Tool{Name: "{environment_name}_list", Description: "List the notes, oldest first."},
		func(ctx context.Context, _ *envsdk.Request, _ struct{}) (ListOut, error) {
			mu.Lock()
			defer mu.Unlock()
			return ListOut{Notes: append([]string{}, notes...)}, nil
		})

	// The data plane: a task resets and seeds the env, a verifier reads it.
	s.HandleReset(func(ctx context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		notes = []string{}
		return nil
	})
	s.HandleAdd(func(ctx context.Context, parts []protocol.Part) error {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range parts {
			if p.Kind == protocol.PartKindText {
				notes = append(notes, p.Text)
			}
		}
		return nil
	})
	s.HandleGet(func(ctx context.Context) ([]protocol.Part, error) {
		mu.Lock()
		defer mu.Unlock()
		data, err := json.Marshal(ListOut{Notes: notes})
		if err != nil {
			return nil, err
		}
		return []protocol.Part{protocol.DataPart(data)}, nil
	})
	return s
}
