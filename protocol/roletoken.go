package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// roleTokenPrefix versions the role-credential format.
const roleTokenPrefix = "aer1."

// RoleToken is the role credential of role for a gateway whose control
// token is controlToken: "aer1.<base64url role>.<base64url HMAC-SHA256>".
// Whoever holds the control token (the runner) can mint a credential for
// any role, including roles first seen after the env was deployed, and the
// gateway checks one without a table of issued tokens. It is a secret:
// anyone holding it speaks for role. Agents send it as
// "Authorization: Bearer <token>".
func RoleToken(controlToken, role string) string {
	return roleTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(role)) + "." + roleTokenMAC(controlToken, role)
}

// RoleOfToken returns the role a credential speaks for when it was minted
// with controlToken; ok is false for anything else.
func RoleOfToken(controlToken, token string) (role string, ok bool) {
	rest, found := strings.CutPrefix(token, roleTokenPrefix)
	if !found || controlToken == "" {
		return "", false
	}
	enc, mac, found := strings.Cut(rest, ".")
	if !found {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) == 0 {
		return "", false
	}
	if !hmac.Equal([]byte(mac), []byte(roleTokenMAC(controlToken, string(raw)))) {
		return "", false
	}
	return string(raw), true
}

func roleTokenMAC(controlToken, role string) string {
	h := hmac.New(sha256.New, []byte(controlToken))
	h.Write([]byte("agentenv role credential v1\x00"))
	h.Write([]byte(role))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
