package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

type envelopeStruct struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// response is a tools/call result as a child sends it back: most of its
// bytes are one long text string.
var response = `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` +
	strings.Repeat("The quick brown fox jumps over the lazy dog. ", 100) +
	`"}],"isError":false}}`

func BenchmarkEnvelope(b *testing.B) {
	data := []byte(envelope)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var e envelopeStruct
			if err := json.Unmarshal(data, &e); err != nil || e.Method != "tools/call" {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var method string
			var id, params []byte
			err := Object(data, func(key, value []byte) error {
				switch string(key) {
				case "method":
					method, _ = String(value)
				case "id":
					id = value
				case "params":
					params = value
				}
				return nil
			})
			if err != nil || method != "tools/call" || id == nil || params == nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkResponse(b *testing.B) {
	data := []byte(response)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var r struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal(data, &r); err != nil || r.Result == nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonscan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			var id, result []byte
			err := Object(data, func(key, value []byte) error {
				switch string(key) {
				case "id":
					id = value
				case "result":
					result = value
				}
				return nil
			})
			if err != nil || id == nil || result == nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkValid(b *testing.B) {
	for _, doc := range []struct{ name, data string }{{"envelope", envelope}, {"response", response}} {
		data := []byte(doc.data)
		b.Run(doc.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !json.Valid(data) {
					b.Fatal("invalid")
				}
			}
		})
		b.Run(doc.name+"/jsonscan", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !Valid(data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
