package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeStrictObject decodes a JSON object body into v, refusing unknown
// fields and trailing data. Error messages name fields and expected types,
// never the values received, because bodies may carry secrets.
func decodeStrictObject(b []byte, v any) error {
	if !isObject(b) {
		return errors.New("body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeDecodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("body must hold exactly one JSON object")
	}
	return nil
}

func describeDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return fmt.Errorf("%s: must be %s", field, jsonTypeName(te.Type.Kind().String()))
	case errors.As(err, &se):
		return fmt.Errorf("body is not valid JSON (offset %d)", se.Offset)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("body is truncated JSON")
	}
	// Errors from our own UnmarshalJSON methods already name the field.
	return err
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "of another type"
}
