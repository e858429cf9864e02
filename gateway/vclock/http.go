package vclock

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/agentenv/agentenv/internal/jsonhttp"
	"github.com/agentenv/agentenv/protocol"
)

// DefaultMaxBodyBytes is GATEWAY_MAX_BODY_BYTES' default.
const DefaultMaxBodyBytes = 8 << 20

// HandlerOptions configures Handler. A nil *HandlerOptions means defaults.
type HandlerOptions struct {
	// MaxBodyBytes bounds the set-time body (413 above it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// GetTimeURL is env_get_time_url in GET /clock/state: the gateway's
	// /clock/time as backing servers reach it. Empty omits the key.
	GetTimeURL string
	// Conflict reports whether a backing server already owns a tool named
	// get_time; set-time then answers 409. Nil means never.
	Conflict func() bool
}

// Handler serves the clock routes (docs/gateway.md).
type Handler struct {
	clk  *Virtual
	opts HandlerOptions
	mux  *http.ServeMux
}

// NewHandler returns the HTTP side of clk.
func NewHandler(clk *Virtual, opts *HandlerOptions) *Handler {
	h := &Handler{clk: clk}
	if opts != nil {
		h.opts = *opts
	}
	if h.opts.MaxBodyBytes <= 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	h.mux = http.NewServeMux()
	h.Register(h.mux)
	return h
}

// Register mounts the four routes on mux with method patterns.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("PUT /clock/set-time", h.SetTime)
	mux.HandleFunc("POST /clock/clear", h.Clear)
	mux.HandleFunc("GET /clock/time", h.Time)
	mux.HandleFunc("GET /clock/state", h.State)
}

// ServeHTTP serves the four routes (and 404/405 for anything else under
// /clock/), for cores that mount one handler at /clock/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// SetTime serves PUT /clock/set-time.
func (h *Handler) SetTime(w http.ResponseWriter, r *http.Request) {
	fields, status, msg := ReadObject(w, r, h.opts.MaxBodyBytes)
	if status != 0 {
		jsonhttp.Write(w, status, protocol.ControlError{Error: msg})
		return
	}
	if h.opts.Conflict != nil && h.opts.Conflict() {
		jsonhttp.Write(w, http.StatusConflict, protocol.ControlError{Error: "'get_time' is already registered by a backing server"})
		return
	}
	st, err := h.clk.SetTime(fields["virtual_time"], fields["virtual_seconds_per_real_second"])
	if err != nil {
		jsonhttp.Write(w, http.StatusBadRequest, protocol.ControlError{Error: err.Error()})
		return
	}
	jsonhttp.Write(w, http.StatusOK, Wire(st))
}

// Clear serves POST /clock/clear; the body is ignored.
func (h *Handler) Clear(w http.ResponseWriter, r *http.Request) {
	h.clk.Clear()
	jsonhttp.Write(w, http.StatusOK, protocol.ClockCleared{OK: true, Armed: false})
}

// Time serves GET /clock/time.
func (h *Handler) Time(w http.ResponseWriter, r *http.Request) {
	now, ok := h.clk.Now()
	if !ok {
		jsonhttp.Write(w, http.StatusNotFound, protocol.ControlError{Error: ErrNotArmed.Error()})
		return
	}
	jsonhttp.Write(w, http.StatusOK, protocol.ClockTime{VirtualTime: FormatTime(now)})
}

// State serves GET /clock/state.
func (h *Handler) State(w http.ResponseWriter, r *http.Request) {
	cs := Wire(h.clk.State())
	if cs.Armed {
		cs.EnvGetTimeURL = h.opts.GetTimeURL
	}
	jsonhttp.Write(w, http.StatusOK, cs)
}

// Wire renders a state as the route body.
func Wire(s State) protocol.ClockState {
	if !s.Armed {
		return protocol.ClockState{Armed: false}
	}
	rate := protocol.Float(s.Rate)
	return protocol.ClockState{Armed: true, T0: FormatTime(s.T0), Rate: &rate, VirtualTime: FormatTime(s.Now)}
}

// ReadObject reads a control-route body bounded by limit and decodes it as a
// JSON object of raw fields. On failure it returns the status (413 or 400)
// and the reference's message ("request body too large", "Invalid JSON body",
// "body must be a JSON object"); status 0 means success.
func ReadObject(w http.ResponseWriter, r *http.Request, limit int64) (map[string]json.RawMessage, int, string) {
	body, status, msg := jsonhttp.ReadBody(w, r, limit)
	if status != 0 {
		return nil, status, msg
	}
	return DecodeObject(body)
}

// DecodeObject is ReadObject's decoding step.
func DecodeObject(body []byte) (map[string]json.RawMessage, int, string) {
	trimmed := bytes.TrimSpace(body)
	if !json.Valid(trimmed) {
		return nil, http.StatusBadRequest, "Invalid JSON body"
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, http.StatusBadRequest, "body must be a JSON object"
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, http.StatusBadRequest, "Invalid JSON body"
	}
	return fields, 0, ""
}
