package envsdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Tool arguments are checked against the tool's input schema before the
// hook and the handler run. mcp-go can do this itself, but it prints each
// violation with Go's %+v ("/: &{Missing:[text]}"), which is what the
// model then reads; here each one is a sentence ("missing property
// 'text'") after the JSON path of the argument ("arguments" for the
// whole object).

// argPrinter words validation errors in English.
var argPrinter = message.NewPrinter(language.English)

// compileArgSchema compiles a tool's input schema; nil (no check) when the
// schema is empty or cannot be compiled, as mcp-go's own check did.
func compileArgSchema(tool string, raw json.RawMessage) *jsonschema.Schema {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil
	}
	url := "mem:///envsdk/tools/" + tool + "/input.json"
	c := jsonschema.NewCompiler()
	if c.AddResource(url, doc) != nil {
		return nil
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil
	}
	return sch
}

// checkArgs validates args against sch; "" when they conform, else the
// message the model gets.
func checkArgs(sch *jsonschema.Schema, args json.RawMessage) string {
	if sch == nil {
		return ""
	}
	var v any = map[string]any{}
	if len(bytes.TrimSpace(args)) > 0 && string(bytes.TrimSpace(args)) != "null" {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(args)); err != nil {
			return "invalid arguments: not valid JSON"
		}
	}
	err := sch.Validate(v)
	if err == nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid arguments: " + err.Error()
	}
	return "invalid arguments: " + strings.Join(violations(ve), "; ")
}

// argDecodeWords words an error of decoding arguments into the handler's
// input type without naming Go types.
func argDecodeWords(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		want := "of another type"
		switch k := te.Type.Kind(); {
		case k == reflect.String:
			want = "a string"
		case k == reflect.Bool:
			want = "a boolean"
		case k >= reflect.Int && k <= reflect.Uint64:
			want = "an integer"
		case k == reflect.Float32 || k == reflect.Float64:
			want = "a number"
		case k == reflect.Slice || k == reflect.Array:
			want = "an array"
		case k == reflect.Map || k == reflect.Struct:
			want = "an object"
		}
		field := te.Field
		if field == "" {
			field = "arguments"
		}
		return fmt.Sprintf("%s: must be %s, got %s", field, want, te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not valid JSON"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// violations words the leaves of a validation error tree.
func violations(ve *jsonschema.ValidationError) []string {
	if len(ve.Causes) > 0 {
		var out []string
		for _, c := range ve.Causes {
			out = append(out, violations(c)...)
		}
		return out
	}
	where := "arguments"
	if len(ve.InstanceLocation) > 0 {
		where = strings.Join(ve.InstanceLocation, ".")
	}
	return []string{fmt.Sprintf("%s: %s", where, ve.ErrorKind.LocalizedString(argPrinter))}
}
