package protocol

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC 2.0 error codes used by the data plane and by A2A.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
	// CodeServerError is a handler failure (data.code says which).
	CodeServerError = -32000
)

// Values of error.data.code for a data-plane handler failure.
const (
	DataCodeResetFailed = "reset_failed"
	DataCodeAddFailed   = "add_failed"
	DataCodeGetFailed   = "get_failed"
)

// Error is a JSON-RPC error object. It implements error, and errors.Is
// matches two *Error values by Code, so callers can branch with
//
//	errors.Is(err, &protocol.Error{Code: protocol.CodeMethodNotFound})
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 && !isNull(e.Data) {
		return fmt.Sprintf("%s (%s)", e.Message, e.Data)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// ErrorDetail is the data of an invalid-params error.
type ErrorDetail struct {
	Detail string `json:"detail"`
}

// ErrorDataCode is the data of a handler-failure error.
type ErrorDataCode struct {
	Code string `json:"code"`
}

// Env-protocol error constructors with the exact messages of the reference.

// NewParseError is returned for a body that is not JSON.
func NewParseError() *Error { return &Error{Code: CodeParseError, Message: "parse error"} }

// NewInvalidRequest is returned for a body that is not a JSON-RPC 2.0
// request object. detail, when non-empty, is carried in data.detail.
func NewInvalidRequest(detail string) *Error {
	e := &Error{Code: CodeInvalidRequest, Message: "invalid request"}
	if detail != "" {
		e.Data = mustJSON(ErrorDetail{Detail: detail})
	}
	return e
}

// NewMethodNotFound is returned for an unknown or unregistered method.
func NewMethodNotFound(method string) *Error {
	return &Error{Code: CodeMethodNotFound, Message: "method not found: " + method}
}

// NewInvalidParams is returned for bad params; detail names the field
// paths at fault, never secret values.
func NewInvalidParams(detail string) *Error {
	return &Error{Code: CodeInvalidParams, Message: "invalid_request", Data: mustJSON(ErrorDetail{Detail: detail})}
}

// NewHandlerError is returned when a data-plane handler fails.
func NewHandlerError(message, dataCode string) *Error {
	return &Error{Code: CodeServerError, Message: message, Data: mustJSON(ErrorDataCode{Code: dataCode})}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with types that always encode
	}
	return b
}

// ExtensionError is the body of a failed REST extension call:
// {"ok":false,"error":{"code":"invalid_params","message":"..."}}.
type ExtensionError struct {
	OK    bool                 `json:"ok"`
	Error ExtensionErrorDetail `json:"error"`
}

// ExtensionErrorDetail is the error object of an ExtensionError.
type ExtensionErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Codes of ExtensionErrorDetail.
const (
	ExtCodeInvalidParams   = "invalid_params"
	ExtCodeExtensionFailed = "extension_failed"
)

// NewExtensionError builds an ExtensionError body.
func NewExtensionError(code, message string) ExtensionError {
	return ExtensionError{OK: false, Error: ExtensionErrorDetail{Code: code, Message: message}}
}
