package agentsdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/agentenv/agentenv/protocol"
)

// peerTable is the peer-agents routing table.
type peerTable struct {
	mu    sync.Mutex
	peers []protocol.Peer
}

func (p *peerTable) get() []protocol.Peer {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]protocol.Peer, len(p.peers))
	copy(out, p.peers)
	return out
}

func (p *peerTable) set(peers []protocol.Peer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.peers = peers
}

func (s *Server) peerAgentsExtension() *extension {
	return &extension{
		uri:         protocol.URIPeerAgents,
		description: "Routing table of peer agents this agent may delegate to over A2A.",
		endpoint:    protocol.AgentPeerAgentsPath,
		methods: []*extMethod{
			{
				name: "set", verb: http.MethodPost,
				request:  fields([]string{"peers"}, nil),
				response: fields([]string{"status"}, nil),
				handle: func(_ *http.Request, body []byte) (any, error) {
					req, err := protocol.DecodePeerAgentsSet(body)
					if err != nil {
						return nil, badRequest(err)
					}
					s.peers.set(req.Peers)
					return protocol.StatusResponse{Status: protocol.StatusUpdated}, nil
				},
			},
			{
				name: "list", verb: http.MethodGet,
				response: fields([]string{"peers"}, nil),
				handle: func(r *http.Request, _ []byte) (any, error) {
					if err := bodyless(r.URL.Query()); err != nil {
						return nil, err
					}
					return protocol.PeerAgentsRequest{Peers: s.peers.get()}, nil
				},
			},
		},
	}
}

// ErrUnknownPeer is returned by Task.AskPeer for a name not in the table.
var ErrUnknownPeer = errors.New("agentsdk: unknown peer")

// PeerReply is a peer's terminal answer.
type PeerReply struct {
	// State is the peer task's final A2A state ("completed", "failed", …).
	State  string
	TaskID string
	Parts  []protocol.Part
}

// Text is the last text part of the reply (what the runner reads too).
func (r *PeerReply) Text() string {
	for i := len(r.Parts) - 1; i >= 0; i-- {
		if r.Parts[i].Kind == protocol.PartKindText {
			return r.Parts[i].Text
		}
	}
	return ""
}

// AskPeer sends text to the named peer over A2A (blocking message/send in
// the given contextID, "" for a new one) and returns its terminal answer.
func (t *Task) AskPeer(ctx context.Context, name, contextID, text string) (*PeerReply, error) {
	var peer *protocol.Peer
	for i := range t.Peers {
		if t.Peers[i].Name == name {
			peer = &t.Peers[i]
		}
	}
	if peer == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPeer, name)
	}
	endpoint, err := peerEndpoint(peer)
	if err != nil {
		return nil, err
	}
	cl, err := a2aclient.NewFromEndpoints(ctx,
		[]a2a.AgentInterface{{URL: endpoint, Transport: a2a.TransportProtocolJSONRPC}},
		a2aclient.WithJSONRPCTransport(t.srv.httpClient))
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", name, err)
	}
	defer func() { _ = cl.Destroy() }()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	msg.ContextID = contextID
	blocking := true
	res, err := cl.SendMessage(ctx, &a2a.MessageSendParams{Message: msg, Config: &a2a.MessageSendConfig{Blocking: &blocking}})
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", name, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		if m, ok := res.(*a2a.Message); ok {
			return &PeerReply{State: string(a2a.TaskStateCompleted), Parts: fromA2AParts(m.Parts)}, nil
		}
		return nil, fmt.Errorf("peer %s: unexpected result %T", name, res)
	}
	reply := &PeerReply{State: string(task.Status.State), TaskID: string(task.ID)}
	if task.Status.Message != nil {
		reply.Parts = fromA2AParts(task.Status.Message.Parts)
	}
	return reply, nil
}

// peerEndpoint resolves the peer's JSON-RPC url: its card url (resolved
// against the peer base url when relative), else {url}/a2a.
func peerEndpoint(p *protocol.Peer) (string, error) {
	base, err := url.Parse(strings.TrimRight(p.URL, "/") + "/")
	if err != nil || base.Host == "" {
		return "", fmt.Errorf("peer %s: invalid url", p.Name)
	}
	var card struct {
		URL string `json:"url"`
	}
	if len(p.Card) > 0 {
		_ = json.Unmarshal(p.Card, &card)
	}
	if card.URL == "" {
		card.URL = protocol.A2APath
	}
	ref, err := url.Parse(card.URL)
	if err != nil {
		return "", fmt.Errorf("peer %s: invalid card url", p.Name)
	}
	if !ref.IsAbs() && strings.HasPrefix(card.URL, "/") {
		// A relative path is relative to the peer's base, which may itself
		// carry a path prefix (a gateway route).
		return strings.TrimRight(base.String(), "/") + card.URL, nil
	}
	return base.ResolveReference(ref).String(), nil
}
