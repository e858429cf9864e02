// Package redact keeps secrets out of everything agentenv persists, prints
// or logs.
//
// Two jobs, two rules:
//
//   - The safe form of a run context: the keys litellm_api_key,
//     judge_litellm_api_key, usersim_api_key, remote_tokens,
//     cf_access_client_secret and gateway_control_token are removed at any depth (Strip, StripJSON).
//     Every DocumentStore applies it to every document it writes, so a
//     caller that forgets cannot leak a key into the database.
//
//   - Display masking: values under secret-shaped keys (password, token,
//     api_key, ...) become "****", and URI userinfo is masked (Mask,
//     MaskURL, IsSecretKey). Config show and the slog handler use it
//     (ReplaceAttr). References such as "env:LITELLM_API_KEY" are shown as
//     written, since they are names, not values.
//
//     safe, err := redact.StripJSON(contextJSON)
//     logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{ReplaceAttr: redact.ReplaceAttr}))
package redact

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/url"
	"strings"
)

// SafeFormKeys are removed at any depth from persisted contexts.
var safeFormKeys = map[string]bool{
	"litellm_api_key":         true,
	"judge_litellm_api_key":   true,
	"usersim_api_key":         true,
	"remote_tokens":           true,
	"cf_access_client_secret": true,
	// A deployed env's gateway control token (deployed_envs[]); the
	// runner finds it again in the env instance record.
	"gateway_control_token": true,
}

// IsSafeFormKey reports whether key is removed by Strip.
func IsSafeFormKey(key string) bool { return safeFormKeys[key] }

// Strip returns a deep copy of v without the safe-form keys. v is a value
// as produced by encoding/json (maps, slices, scalars); other values are
// returned as they are.
func Strip(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if safeFormKeys[k] {
				continue
			}
			out[k] = Strip(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Strip(e)
		}
		return out
	default:
		return v
	}
}

// StripJSON removes the safe-form keys from a JSON document, keeping
// numbers exact. Input without any such key is returned unchanged (same
// bytes), so the common case costs one scan.
func StripJSON(doc []byte) ([]byte, error) {
	if !mayContainSafeFormKey(doc) {
		return doc, nil
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(Strip(v))
}

func mayContainSafeFormKey(doc []byte) bool {
	for k := range safeFormKeys {
		if bytes.Contains(doc, []byte(`"`+k+`"`)) {
			return true
		}
	}
	// Escaped key spellings ("\u006c...") are rare; fall back to a full
	// decode when any escape is present near a quote.
	return bytes.Contains(doc, []byte(`\u`))
}

// secretWords mark a key as secret-shaped for display.
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token",
	"credential", "api_key", "apikey", "private_key", "auth", "bearer"}

// IsSecretKey reports whether a key name looks like it holds a secret
// (case-insensitive; "-" and "_" are equivalent).
func IsSecretKey(key string) bool {
	k := strings.ReplaceAll(strings.ToLower(key), "-", "_")
	for _, w := range secretWords {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Masked is what a secret value is displayed as.
const Masked = "****"

// MaskValue masks a value found under key: secret-shaped keys become
// Masked unless the value is empty or a reference (env:/secret:), which is a
// name and is shown as written; any URL has its userinfo masked.
func MaskValue(key, value string) string {
	if value == "" {
		return value
	}
	if IsSecretKey(key) && !isReference(value) {
		return Masked
	}
	return MaskURL(value)
}

func isReference(s string) bool {
	return strings.HasPrefix(s, "env:") || strings.HasPrefix(s, "secret:")
}

// MaskURL masks the password (or, alone, the user) of a URL's userinfo:
// "postgres://u:pw@h/db" → "postgres://u:****@h/db". Non-URLs and URLs
// without userinfo are returned unchanged. Key/value DSNs
// ("host=h password=pw") have their password masked too.
func MaskURL(s string) string {
	if i := strings.Index(s, "://"); i > 0 {
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), Masked)
			} else {
				u.User = url.User(Masked)
			}
			return strings.Replace(u.String(), url.QueryEscape(Masked), Masked, 1)
		}
		return s
	}
	if strings.Contains(s, "password=") {
		f := strings.Fields(s)
		for i, kv := range f {
			if strings.HasPrefix(kv, "password=") {
				f[i] = "password=" + Masked
			}
		}
		return strings.Join(f, " ")
	}
	return s
}

// Mask returns a deep copy of v with display masking applied to every
// string under a secret-shaped key, every safe-form key and every URL.
func Mask(v any) any { return mask("", v) }

func mask(key string, v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if safeFormKeys[k] {
				if s, ok := e.(string); ok && (s == "" || isReference(s)) {
					out[k] = s
				} else {
					out[k] = Masked
				}
				continue
			}
			out[k] = mask(k, e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = mask(key, e)
		}
		return out
	case string:
		return MaskValue(key, t)
	default:
		return v
	}
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that masks attributes
// whose key is secret-shaped and URL userinfo in string attributes.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindString {
		a.Value = slog.StringValue(MaskValue(a.Key, a.Value.String()))
	} else if IsSecretKey(a.Key) && a.Value.Kind() != slog.KindGroup {
		a.Value = slog.StringValue(Masked)
	}
	return a
}
