package gateway

import (
	"crypto/subtle"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/agentenv/agentenv/protocol"
)

// This file decides who an HTTP request speaks for: its role (from the
// AgentEnv-Role header or a role credential) and whether it carries the
// control token. The rules and their reasons are in docs/security.md.

// caller is who one HTTP request speaks for.
type caller struct {
	// role is the attributed role; "default" when none was given.
	role string
	// named is set when the role was given (a non-blank header or a role
	// credential), as opposed to defaulted.
	named bool
	// operator is set when the request carries the control token.
	operator bool
	// credential is set when the role comes from a role credential.
	credential bool
}

// authError is a request the gateway refuses to attribute; each route
// answers it in its own envelope.
type authError struct {
	status int
	msg    string
}

var canonicalRoleHeader = textproto.CanonicalMIMEHeaderKey(protocol.HeaderRole)

// roleHeader returns the request's AgentEnv-Role value. net/http
// canonicalises header names but keeps underscores ("AgentEnv_Role" arrives
// as "Agentenv_role"), while CGI-style servers fold '_' and '-' together: a
// second spelling could carry a second role past one reader to another, so
// any other spelling is refused, as is a repeated header or a list value.
func roleHeader(h http.Header) (value string, err *authError) {
	for k, vs := range h {
		if len(k) != len(canonicalRoleHeader) || !roleHeaderName(k) {
			continue
		}
		if k != canonicalRoleHeader {
			return "", &authError{http.StatusBadRequest, "header " + k + ": the role header is spelled " + protocol.HeaderRole + "; other spellings are refused"}
		}
		if len(vs) > 1 {
			return "", &authError{http.StatusBadRequest, "header " + protocol.HeaderRole + " is repeated; send it once"}
		}
		if len(vs) == 1 {
			value = strings.TrimSpace(vs[0])
			if strings.Contains(value, ",") {
				return "", &authError{http.StatusBadRequest, "header " + protocol.HeaderRole + " holds a list; send one role"}
			}
		}
	}
	return value, nil
}

// roleHeaderName reports whether k spells agentenv-role, ignoring case and
// with '_' for '-'.
func roleHeaderName(k string) bool {
	const want = "agentenv-role"
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == '_' {
			c = '-'
		}
		if c != want[i] {
			return false
		}
	}
	return true
}

// bearer returns the token of an "Authorization: Bearer <token>" header;
// the scheme is case-insensitive (RFC 9110 §11.1).
func bearer(r *http.Request) (string, bool) {
	vs := r.Header["Authorization"]
	if len(vs) != 1 {
		return "", false
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vs[0]), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	return tok, true
}

// tokenOK reports whether the request carries the control token (compared
// in constant time).
func (g *Gateway) tokenOK(r *http.Request) bool {
	tok, ok := bearer(r)
	return ok && g.cfg.ControlToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.ControlToken)) == 1
}

// identify attributes a request on an agent route. With a control token
// configured, the control token makes the caller an operator (the header
// role is trusted) and a role credential fixes the role whatever the header
// says; under GATEWAY_ROLE_TOKENS=required a request with neither is 401.
// Without a control token the header role is trusted as is.
func (g *Gateway) identify(r *http.Request) (caller, *authError) {
	return g.attribute(r, g.cfg.RoleAuth == RoleAuthRequired)
}

// attribute is identify with the credential requirement given: website
// upstreams never require one (a browser cannot send it, and no role rule
// applies there).
func (g *Gateway) attribute(r *http.Request, credentialRequired bool) (caller, *authError) {
	v, herr := roleHeader(r.Header)
	if herr != nil {
		return caller{}, herr
	}
	c := caller{role: protocol.GatewayRole(v), named: v != ""}
	if g.cfg.ControlToken == "" {
		return c, nil
	}
	if tok, ok := bearer(r); ok {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.ControlToken)) == 1 {
			c.operator = true
			return c, nil
		}
		if role, ok := protocol.RoleOfToken(g.cfg.ControlToken, tok); ok {
			return caller{role: role, named: true, credential: true}, nil
		}
	}
	if credentialRequired {
		return caller{}, &authError{http.StatusUnauthorized, "role credential required: send Authorization: Bearer <role token>"}
	}
	return c, nil
}

// refuse answers an authError as {"error":…} (with "ok":false when
// okEnvelope), with the WWW-Authenticate challenge on 401.
func refuse(w http.ResponseWriter, e *authError, okEnvelope bool) {
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentenv-gateway"`)
	}
	body := map[string]any{"error": e.msg}
	if okEnvelope {
		body["ok"] = false
	}
	writeJSON(w, e.status, body)
}

// errControlToken is the refusal of a control route without the token.
var errControlToken = &authError{http.StatusUnauthorized, "control token required"}
