// Package decodeerr says what is wrong with a JSON or TOML document in
// the words of the document, not of the Go program reading it.
//
// encoding/json and go-toml describe a mismatch with the Go type they
// decode into ("json: cannot unmarshal object into Go value of type
// []json.RawMessage", "toml: cannot decode TOML string into struct field
// config.RunnerConfig.Workers of type int"). A user wrote JSON or TOML, so
// JSON rewrites such errors as "must be a list, got an object", with the
// line and column of a syntax error, and TOML does the same for TOML.
// Words rewrites any remaining Go type phrase in a message.
package decodeerr
