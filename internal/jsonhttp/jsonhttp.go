// Package jsonhttp is the JSON-over-HTTP plumbing the gateway's control
// routes (the virtual clock's /clock/* and the triggers' /triggers/*) share:
// reading a bounded request body and writing a JSON reply.
//
// Both route sets answer with the reference's exact messages ("request body
// too large", "Invalid JSON body"), so the helpers return a status and that
// message rather than an error for the caller to word:
//
//	body, status, msg := jsonhttp.ReadBody(w, r, limit)
//	if status != 0 {
//		jsonhttp.Write(w, status, protocol.ControlError{Error: msg})
//		return
//	}
//
// Replies are not HTML-escaped ("<" stays "<"), as the reference's JSON
// responses are not either.
package jsonhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// Messages ReadBody returns with its status.
const (
	MsgTooLarge    = "request body too large"
	MsgInvalidJSON = "Invalid JSON body"
)

// ReadBody reads r's body, at most limit bytes. On failure it returns 413
// with MsgTooLarge when the body is over limit, or 400 with MsgInvalidJSON
// when it cannot be read; status 0 means success.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, status int, msg string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, MsgTooLarge
		}
		return nil, http.StatusBadRequest, MsgInvalidJSON
	}
	return body, 0, ""
}

// Write sends v as a JSON reply with status. A value that cannot be
// encoded (a programming error: control replies are plain structs) becomes
// a 500 with a fixed body rather than a half-written reply.
func Write(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"ok":false,"error":"encoding failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
