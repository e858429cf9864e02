package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentenv/agentenv/agentsdk"
)

// ConversationFormat names the scripted agent's snapshot trajectory.
const ConversationFormat = "agentenv-scripted-conversation/v1"

// maxConversations bounds the contexts kept for snapshots; the oldest is
// dropped first.
const maxConversations = 1024

// Turn is one exchange of a conversation.
type Turn struct {
	Prompt string `json:"prompt"`
	Reply  string `json:"reply,omitempty"`
	Error  string `json:"error_code,omitempty"`
}

// conversationFile is the snapshot's trajectory object.
type conversationFile struct {
	Format    string `json:"format"`
	ContextID string `json:"context_id"`
	Turns     []Turn `json:"turns"`
}

// conversations keeps each context's turns, so the agent can save and
// restore them through the snapshot extension. The zero value is ready.
type conversations struct {
	mu    sync.Mutex
	turns map[string][]Turn
	order []string
}

func (c *conversations) add(contextID string, t Turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.turns == nil {
		c.turns = map[string][]Turn{}
	}
	if _, ok := c.turns[contextID]; !ok {
		c.order = append(c.order, contextID)
		if len(c.order) > maxConversations {
			delete(c.turns, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.turns[contextID] = append(c.turns[contextID], t)
}

func (c *conversations) get(contextID string) ([]Turn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.turns[contextID]
	return append([]Turn(nil), t...), ok
}

func (c *conversations) set(contextID string, t []Turn) {
	c.mu.Lock()
	if c.turns == nil {
		c.turns = map[string][]Turn{}
	}
	_, had := c.turns[contextID]
	c.mu.Unlock()
	if !had {
		c.add(contextID, Turn{}) // registers the context in order
	}
	c.mu.Lock()
	c.turns[contextID] = append([]Turn(nil), t...)
	c.mu.Unlock()
}

var _ agentsdk.Snapshotter = (*Agent)(nil)

// SaveSnapshot implements agentsdk.Snapshotter: the context's turns as JSON.
func (a *Agent) SaveSnapshot(_ context.Context, contextID string) (*agentsdk.Snapshot, error) {
	turns, ok := a.conv.get(contextID)
	if !ok {
		return nil, fmt.Errorf("context %s: %w", contextID, agentsdk.ErrUnknownContext)
	}
	b, err := json.Marshal(conversationFile{Format: ConversationFormat, ContextID: contextID, Turns: turns})
	if err != nil {
		return nil, err
	}
	return &agentsdk.Snapshot{Trajectory: b}, nil
}

// LoadSnapshot implements agentsdk.Snapshotter: the turns become the
// target context's history (a new context when none is named).
func (a *Agent) LoadSnapshot(_ context.Context, s *agentsdk.Snapshot, target string) (string, error) {
	var f conversationFile
	if err := json.Unmarshal(s.Trajectory, &f); err != nil || f.Format != ConversationFormat {
		return "", agentsdk.Fail("bad_snapshot", "The trajectory is not a scripted-agent conversation")
	}
	if target == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		target = hex.EncodeToString(b)
	}
	a.conv.set(target, f.Turns)
	return target, nil
}
