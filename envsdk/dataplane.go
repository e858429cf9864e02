package envsdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/agentenv/agentenv/protocol"
)

// serveDataPlane answers POST /agentenv. Every answer is HTTP
// 200 with a JSON-RPC response, whatever the body.
func (s *Server) serveDataPlane(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		detail := "read body: " + err.Error()
		if errors.As(err, &mbe) {
			detail = fmt.Sprintf("body exceeds %d bytes", mbe.Limit)
		}
		writeRPC(w, protocol.NewErrorResponse(protocol.NullID, protocol.NewInvalidRequest(detail)))
		return
	}
	req, rpcErr := protocol.DecodeRequest(body)
	if rpcErr != nil {
		writeRPC(w, protocol.NewErrorResponse(req.ID, rpcErr))
		return
	}
	result, rpcErr := s.dispatch(s.withServer(r.Context()), req)
	if rpcErr != nil && rpcErr.Code == protocol.CodeServerError {
		s.opts.Logger.Warn("data-plane handler failed", "method", req.Method, "err", rpcErr.Message)
	}
	if rpcErr != nil {
		writeRPC(w, protocol.NewErrorResponse(req.ID, rpcErr))
		return
	}
	resp, err := protocol.NewResult(req.ID, result)
	if err != nil {
		writeRPC(w, protocol.NewErrorResponse(req.ID, protocol.NewHandlerError("encode result: "+err.Error(), protocol.DataCodeGetFailed)))
		return
	}
	writeRPC(w, resp)
}

func (s *Server) dispatch(ctx context.Context, req *protocol.Request) (any, *protocol.Error) {
	switch req.Method {
	case protocol.MethodDataReset:
		if s.reset == nil {
			break
		}
		if err := s.runData(func() error { return s.reset(ctx) }); err != nil {
			return nil, protocol.NewHandlerError(err.Error(), protocol.DataCodeResetFailed)
		}
		return protocol.EmptyResult{}, nil
	case protocol.MethodDataAdd:
		if s.add == nil {
			break
		}
		p, err := protocol.DecodeAddParams(req.Params)
		if err != nil {
			return nil, protocol.NewInvalidParams(err.Error())
		}
		if err := s.runData(func() error { return s.add(ctx, p.Parts) }); err != nil {
			return nil, protocol.NewHandlerError(err.Error(), protocol.DataCodeAddFailed)
		}
		return protocol.EmptyResult{}, nil
	case protocol.MethodDataGet:
		if s.get == nil {
			break
		}
		if t := bytes.TrimSpace(req.Params); len(t) == 0 || t[0] != '{' {
			return nil, protocol.NewInvalidParams("params: must be a JSON object")
		}
		var grant *WriteNamespaceGrant
		if s.getGrant != nil { // a handler without grants ignores one
			p, err := protocol.DecodeGetParams(req.Params)
			if err != nil {
				return nil, protocol.NewInvalidParams(err.Error())
			}
			if p.WriteNamespace != nil {
				if grant, err = decodeGrant(p.WriteNamespace); err != nil {
					return nil, protocol.NewInvalidParams(err.Error())
				}
			}
		}
		var parts []protocol.Part
		err := s.runData(func() error {
			var err error
			if s.getGrant != nil {
				parts, err = s.getGrant(ctx, grant)
			} else {
				parts, err = s.get(ctx)
			}
			return err
		})
		if err != nil {
			return nil, protocol.NewHandlerError(err.Error(), protocol.DataCodeGetFailed)
		}
		if parts == nil {
			parts = []protocol.Part{}
		}
		// Encode here so that a part the handler built wrongly is a
		// get_failed error rather than a broken response.
		if _, err := json.Marshal(parts); err != nil {
			return nil, protocol.NewHandlerError(err.Error(), protocol.DataCodeGetFailed)
		}
		return protocol.GetResult{Parts: parts}, nil
	}
	return nil, protocol.NewMethodNotFound(req.Method)
}

// runData runs one data-plane handler at a time (reset then add must not
// interleave with another load) and turns a panic into an error.
func (s *Server) runData(f func() error) (err error) {
	s.dataMu.Lock()
	defer s.dataMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return f()
}

func writeRPC(w http.ResponseWriter, resp *protocol.Response) {
	writeJSON(w, http.StatusOK, resp)
}
