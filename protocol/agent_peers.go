package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Peer is one entry of the peer-agents routing table.
type Peer struct {
	Name string `json:"name"`
	// URL is the peer's A2A base URL; delegation posts to {URL}/a2a or to
	// the peer card's url resolved against it.
	URL string `json:"url"`
	// Card is the peer's full agent card, when known.
	Card        json.RawMessage `json:"card,omitempty"`
	Description string          `json:"description,omitempty"`
}

// PeerAgentsRequest is the body of peer-agents set and the answer of list:
// {"peers":[…]}.
type PeerAgentsRequest struct {
	Peers []Peer `json:"peers"`
}

// DecodePeerAgentsSet decodes a set body strictly: unknown fields (at the
// top or in a peer) are refused, names and urls must be non-empty, names
// unique, and cards JSON objects.
func DecodePeerAgentsSet(b []byte) (*PeerAgentsRequest, error) {
	var w struct {
		Peers *[]Peer `json:"peers"`
	}
	if err := decodeStrictObject(b, &w); err != nil {
		return nil, err
	}
	if w.Peers == nil {
		return nil, errors.New("peers: required")
	}
	seen := map[string]bool{}
	for i, p := range *w.Peers {
		switch {
		case strings.TrimSpace(p.Name) == "":
			return nil, fmt.Errorf("peers[%d].name: must not be empty", i)
		case strings.TrimSpace(p.URL) == "":
			return nil, fmt.Errorf("peers[%d].url: must not be empty", i)
		case len(p.Card) > 0 && !isNull(p.Card) && !isObject(p.Card):
			return nil, fmt.Errorf("peers[%d].card: must be an object", i)
		case seen[p.Name]:
			return nil, fmt.Errorf("peers[%d].name: duplicate name", i)
		}
		seen[p.Name] = true
		if isNull(p.Card) {
			(*w.Peers)[i].Card = nil
		}
	}
	return &PeerAgentsRequest{Peers: *w.Peers}, nil
}

// UnmarshalJSON refuses unknown peer fields.
func (p *Peer) UnmarshalJSON(b []byte) error {
	type plain Peer
	var v plain
	if err := decodeStrictObject(b, &v); err != nil {
		return err
	}
	*p = Peer(v)
	return nil
}
