package triggers

import (
	"errors"
	"net/http"

	"github.com/agentenv/agentenv/gateway/vclock"
	"github.com/agentenv/agentenv/internal/jsonhttp"
	"github.com/agentenv/agentenv/protocol"
)

// HandlerOptions configures Handler. A nil *HandlerOptions means defaults.
type HandlerOptions struct {
	// MaxBodyBytes bounds request bodies (413 above it); 0 means
	// vclock.DefaultMaxBodyBytes.
	MaxBodyBytes int64
}

// Handler serves the trigger routes (docs/gateway.md).
type Handler struct {
	e     *Engine
	limit int64
	mux   *http.ServeMux
}

// NewHandler returns the HTTP side of e.
func NewHandler(e *Engine, opts *HandlerOptions) *Handler {
	h := &Handler{e: e, limit: vclock.DefaultMaxBodyBytes}
	if opts != nil && opts.MaxBodyBytes > 0 {
		h.limit = opts.MaxBodyBytes
	}
	h.mux = http.NewServeMux()
	h.Register(h.mux)
	return h
}

// Register mounts the four routes on mux with method patterns.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST /triggers/register", h.RegisterTriggers)
	mux.HandleFunc("POST /triggers/remove", h.Remove)
	mux.HandleFunc("POST /triggers/clear", h.Clear)
	mux.HandleFunc("GET /triggers/state", h.State)
}

// ServeHTTP serves the four routes, for cores that mount one handler at
// /triggers/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, status, msg := jsonhttp.ReadBody(w, r, h.limit)
	if status != 0 {
		jsonhttp.Write(w, status, protocol.ControlError{Error: msg})
		return nil, false
	}
	return body, true
}

func writeErr(w http.ResponseWriter, err error) {
	var se *SpecError
	if errors.As(err, &se) {
		jsonhttp.Write(w, http.StatusBadRequest, protocol.ControlError{Error: se.Msg})
		return
	}
	jsonhttp.Write(w, http.StatusInternalServerError, protocol.ControlError{Error: err.Error()})
}

// RegisterTriggers serves POST /triggers/register.
func (h *Handler) RegisterTriggers(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	res, err := h.e.Register(r.Context(), body)
	if err != nil {
		writeErr(w, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, res)
}

// Remove serves POST /triggers/remove.
func (h *Handler) Remove(w http.ResponseWriter, r *http.Request) {
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	res, err := h.e.Remove(r.Context(), body)
	if err != nil {
		writeErr(w, err)
		return
	}
	jsonhttp.Write(w, http.StatusOK, res)
}

// Clear serves POST /triggers/clear; the body is optional and ignored.
func (h *Handler) Clear(w http.ResponseWriter, r *http.Request) {
	jsonhttp.Write(w, http.StatusOK, h.e.Clear())
}

// State serves GET /triggers/state.
func (h *Handler) State(w http.ResponseWriter, r *http.Request) {
	jsonhttp.Write(w, http.StatusOK, h.e.State())
}
