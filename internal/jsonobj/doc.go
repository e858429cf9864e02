// Package jsonobj keeps the members of a JSON object that a Go struct does
// not declare, so a document written by another build (a newer one, or the
// Python framework) survives being read into a struct and written again.
//
// A type that wants this holds an Extra and defines its codec through a
// method-less copy of itself:
//
//	type Env struct {
//		ID    string        `json:"id"`
//		Extra jsonobj.Extra `json:"-"`
//	}
//
//	func (e *Env) UnmarshalJSON(b []byte) error {
//		type plain Env
//		return jsonobj.Decode(b, (*plain)(e), &e.Extra)
//	}
//
//	func (e Env) MarshalJSON() ([]byte, error) {
//		type plain Env
//		return jsonobj.Encode(plain(e), e.Extra)
//	}
//
// The declared members are those the struct's json tags name, embedded
// structs included; everything else lands in Extra verbatim and is written
// back after the declared members, in key order.
package jsonobj
