package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Data-plane methods, in the order capabilities.operations lists them.
const (
	MethodDataReset = "data/reset"
	MethodDataAdd   = "data/add"
	MethodDataGet   = "data/get"
)

// DataPlaneMethods is the fixed order of capabilities.operations.
var DataPlaneMethods = [...]string{MethodDataReset, MethodDataAdd, MethodDataGet}

// Request is a JSON-RPC 2.0 request envelope as the data plane reads it.
// ID is kept verbatim (any JSON type; absent means null) so that the
// response can echo it.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response. ID is always present (null when the
// request had none or could not be read).
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// NullID is the JSON null id.
var NullID = json.RawMessage("null")

// NewResult builds a success response.
func NewResult(id json.RawMessage, result any) (*Response, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return &Response{JSONRPC: "2.0", ID: orNull(id), Result: b}, nil
}

// NewErrorResponse builds an error response.
func NewErrorResponse(id json.RawMessage, e *Error) *Response {
	return &Response{JSONRPC: "2.0", ID: orNull(id), Error: e}
}

func orNull(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return NullID
	}
	return id
}

// DecodeRequest parses one data-plane request body. It never panics; on
// failure it returns the reference's error and the id to echo (null when the
// body could not be read as an object):
//
//   - not JSON: -32700 "parse error";
//   - not an object, jsonrpc other than "2.0", or no string method: -32600.
//
// Params that are missing or null become {}. Params of any other non-object
// type are left as they are, for the method to reject as -32602.
func DecodeRequest(body []byte) (*Request, *Error) {
	if !json.Valid(body) {
		return &Request{ID: NullID}, NewParseError()
	}
	if !isObject(body) {
		return &Request{ID: NullID}, NewInvalidRequest("")
	}
	var w struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return &Request{ID: NullID}, NewInvalidRequest("")
	}
	req := &Request{ID: orNull(w.ID), Params: w.Params}
	if err := json.Unmarshal(w.JSONRPC, &req.JSONRPC); err != nil || req.JSONRPC != "2.0" {
		return req, NewInvalidRequest("")
	}
	if len(w.Method) == 0 || isNull(w.Method) || json.Unmarshal(w.Method, &req.Method) != nil {
		return req, NewInvalidRequest("")
	}
	if len(req.Params) == 0 || isNull(req.Params) {
		req.Params = json.RawMessage("{}")
	}
	return req, nil
}

// AddParams are the params of data/add.
type AddParams struct {
	Parts []Part `json:"parts"`
}

// GetParams are the params of data/get. WriteNamespace is an optional
// write-namespace grant, kept raw until grants are implemented.
type GetParams struct {
	WriteNamespace json.RawMessage `json:"write_namespace,omitempty"`
}

// GetResult is the result of data/get.
type GetResult struct {
	Parts []Part `json:"parts"`
}

// EmptyResult is the {} result of data/reset and data/add.
type EmptyResult struct{}

// DecodeAddParams parses data/add params. The error text names the field
// at fault and is meant for data.detail of a -32602 error.
func DecodeAddParams(params json.RawMessage) (*AddParams, error) {
	if !isObject(params) {
		return nil, errors.New("params: must be a JSON object")
	}
	var raw struct {
		Parts json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(params, &raw); err != nil {
		return nil, fmt.Errorf("params: %v", err)
	}
	if len(raw.Parts) == 0 || isNull(raw.Parts) {
		return nil, errors.New("parts: required")
	}
	if t := bytes.TrimSpace(raw.Parts); len(t) == 0 || t[0] != '[' {
		return nil, errors.New("parts: must be a list")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw.Parts, &items); err != nil {
		return nil, fmt.Errorf("parts: %v", err)
	}
	if len(items) == 0 {
		return nil, errors.New("parts: must contain at least one part")
	}
	out := &AddParams{Parts: make([]Part, len(items))}
	for i, it := range items {
		if err := json.Unmarshal(it, &out.Parts[i]); err != nil {
			return nil, fmt.Errorf("parts[%d].%v", i, err)
		}
	}
	return out, nil
}

// DecodeGetParams parses data/get params.
func DecodeGetParams(params json.RawMessage) (*GetParams, error) {
	if !isObject(params) {
		return nil, errors.New("params: must be a JSON object")
	}
	var p GetParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("params: %v", err)
	}
	if isNull(p.WriteNamespace) {
		p.WriteNamespace = nil
	}
	if p.WriteNamespace != nil && !isObject(p.WriteNamespace) {
		return nil, errors.New("write_namespace: must be a JSON object")
	}
	return &p, nil
}
