package protocol

import (
	"encoding/json"
	"fmt"
)

// Intake is the urn:agentenv:intake/v1 declaration:
// which seed formats data/add accepts and data/get produces. It is a
// declaration only; no route serves it.
type Intake struct {
	Add []IntakeFormat `json:"add,omitempty"`
	Get []IntakeFormat `json:"get,omitempty"`
}

// IntakeFormat is one accepted or produced format. Unset fields are
// omitted on the wire.
type IntakeFormat struct {
	// Part is "data", "file" or "text".
	Part string `json:"part"`
	// Format is "json", "zip-bundle", "csv", ...
	Format    string   `json:"format"`
	MimeTypes []string `json:"mimeTypes,omitempty"`
	// Load is "additive" or "replace".
	Load         string `json:"load,omitempty"`
	BundleLayout string `json:"bundleLayout,omitempty"`
	// Tables maps a top-level list name to the JSON Schema of its rows.
	Tables map[string]json.RawMessage `json:"tables,omitempty"`
}

// Extension returns the card entry declaring the intake. An empty
// declaration encodes as params {}.
func (in Intake) Extension() (Extension, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return Extension{}, fmt.Errorf("intake: %w", err)
	}
	return Extension{URI: URIIntake, Params: b}, nil
}

// IntakeOf returns the card's intake declaration, or nil for "no claim":
// no extension, an extension without params, or an empty declaration.
// A declaration that cannot be read is an error.
func IntakeOf(card *EnvCard) (*Intake, error) {
	e := card.FindExtension(URIIntake)
	if e == nil || len(e.Params) == 0 || isNull(e.Params) {
		return nil, nil
	}
	var in Intake
	if err := json.Unmarshal(e.Params, &in); err != nil {
		return nil, fmt.Errorf("intake params: %w", err)
	}
	if len(in.Add) == 0 && len(in.Get) == 0 {
		return nil, nil
	}
	return &in, nil
}
