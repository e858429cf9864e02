package protocol

import (
	"encoding/base64"
	"strings"
)

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// decodeBase64 accepts standard and URL-safe alphabets, padded or not,
// because seed files are produced by many tools.
func decodeBase64(s string) ([]byte, error) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
