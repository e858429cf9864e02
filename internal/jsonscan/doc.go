// Package jsonscan is a single-pass, allocation-free JSON scanner for the
// gateway's hot path.
//
// Every proxied MCP tools/call decodes a JSON-RPC envelope, its params and
// the child's response. With encoding/json each of those is a json.Unmarshal
// into a struct of json.RawMessage fields, which reads every byte twice
// (checkValid, then the decode) and copies each raw field into a fresh
// allocation. The gateway only needs a handful of top-level members and
// forwards the rest untouched, so Object walks the members once, validating
// as it goes, and hands out sub-slices of the input instead of copies.
//
// Speed is worth nothing here if it changes what the gateway accepts, so
// the package validates exactly like json.Valid: RFC 8259 with JSON's four
// whitespace bytes only, encoding/json's nesting limit of 10000, control
// characters rejected in strings, invalid UTF-8 accepted. Keys and String
// unescape exactly like json.Unmarshal into a string. Fuzz tests hold it to
// encoding/json on all of these.
//
// One difference from decoding into a struct remains the caller's to
// mind: encoding/json matches struct field names case-insensitively
// ("Method" fills a Method field tagged "method"), while Object reports keys
// as they are and the caller compares them exactly, as JSON-RPC intends.
//
// Object reports members as it meets them but may find a syntax error
// later, so act on what fn collected only once Object returns nil:
//
//	var method string
//	var id, params []byte
//	err := jsonscan.Object(body, func(key, value []byte) error {
//		switch string(key) {
//		case "method":
//			s, ok := jsonscan.String(value)
//			if !ok {
//				return errBadMethod
//			}
//			method = s
//		case "id":
//			id = value
//		case "params":
//			params = value
//		}
//		return nil
//	})
//	if err != nil {
//		return err
//	}
package jsonscan
