package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/agentenv/agentenv/internal/didyoumean"
)

// The output convention of every command that prints a record or a list:
//
//	-o, --output json|yaml|table   (--json is an alias of -o json)
//
// A command adopts it in two lines:
//
//	out := addOutputFlag(cmd, "table")             // the default format
//	...
//	return out.print(d.stdout, value, func(w io.Writer) error { ...human text... })
//
// value is whatever the command would print as JSON (a struct with json
// tags, a map, a json.RawMessage); yaml is rendered from that same JSON so
// the two never disagree on field names or order. A nil table function
// prints the record as "key: value" lines (recordTable). A command whose
// human form is not a table (a deploy's progress lines) checks
// out.structured() to move its progress lines to stderr.

// Output formats.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

var outputFormats = []string{formatJSON, formatYAML, formatTable}

// outputFlag is the value of -o/--output and of its --json alias.
type outputFlag struct {
	format  string // "" until set: the command's default
	def     string
	jsonSet bool // --json given
}

// addOutputFlag registers -o/--output and --json on cmd; def is the format
// without a flag.
func addOutputFlag(cmd *cobra.Command, def string) *outputFlag {
	o := &outputFlag{def: def}
	f := cmd.Flags()
	f.VarP((*formatValue)(o), "output", "o", "output format: json, yaml or table (default "+def+")")
	f.Var((*jsonAlias)(o), "json", "alias of -o json")
	f.Lookup("json").NoOptDefVal = "true"
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(outputFormats, cobra.ShellCompDirectiveNoFileComp))
	return o
}

// Format is the chosen format.
func (o *outputFlag) Format() string {
	switch {
	case o == nil:
		return formatTable
	case o.jsonSet:
		return formatJSON
	case o.format != "":
		return o.format
	}
	return o.def
}

// structured reports whether the output is for a program (json, yaml):
// progress lines then belong on stderr.
func (o *outputFlag) structured() bool { return o.Format() != formatTable }

// print writes v in the chosen format; table renders the human form.
func (o *outputFlag) print(w io.Writer, v any, table func(io.Writer) error) error {
	switch o.Format() {
	case formatJSON:
		return writeJSON(w, v)
	case formatYAML:
		return writeYAML(w, v)
	}
	if table == nil {
		return recordTable(w, v)
	}
	return table(w)
}

// printJSON prints v as the running command's structured output: YAML
// under -o yaml, else JSON. Commands that print JSON whatever the flags
// (the get commands of the reference CLI) and the structured branch of
// the others use it, so -o yaml works wherever JSON is printed.
func printJSON(d *deps, v any) error {
	if d.output.Format() == formatYAML {
		return writeYAML(d.stdout, v)
	}
	return writeJSON(d.stdout, v)
}

// outputOf is the output flag of cmd, nil when it has none.
func outputOf(cmd *cobra.Command) *outputFlag {
	if f := cmd.Flags().Lookup("output"); f != nil {
		if v, ok := f.Value.(*formatValue); ok {
			return (*outputFlag)(v)
		}
	}
	return nil
}

type formatValue outputFlag

func (f *formatValue) String() string { return (*outputFlag)(f).format }
func (f *formatValue) Type() string   { return "format" }
func (f *formatValue) Set(s string) error {
	s = strings.ToLower(strings.TrimSpace(s))
	for _, ok := range outputFormats {
		if s == ok {
			if f.jsonSet && s != formatJSON {
				return fmt.Errorf("--json means -o json; it cannot be combined with -o %s", s)
			}
			f.format = s
			return nil
		}
	}
	return fmt.Errorf("unknown format %q%s", s, didyoumean.Suffix(s, outputFormats))
}

type jsonAlias outputFlag

func (j *jsonAlias) String() string   { return fmt.Sprint(j.jsonSet) }
func (j *jsonAlias) Type() string     { return "bool" }
func (j *jsonAlias) IsBoolFlag() bool { return true }
func (j *jsonAlias) Set(s string) error {
	switch s {
	case "true":
		if j.format != "" && j.format != formatJSON {
			return fmt.Errorf("--json means -o json; it cannot be combined with -o %s", j.format)
		}
		j.jsonSet = true
	case "false":
		j.jsonSet = false
	default:
		return fmt.Errorf("want true or false, got %q", s)
	}
	return nil
}

// writeJSON writes v as indented JSON (a json.RawMessage re-indented).
func writeJSON(w io.Writer, v any) error {
	var b []byte
	var err error
	if raw, ok := v.(json.RawMessage); ok {
		var buf bytes.Buffer
		if err = json.Indent(&buf, raw, "", "  "); err != nil {
			return err
		}
		b = buf.Bytes()
	} else if b, err = json.MarshalIndent(v, "", "  "); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// writeYAML writes v as YAML, from its JSON form so that field names and
// order are those of -o json.
func writeYAML(w io.Writer, v any) error {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return err
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// blockStyle drops the flow style and quoting the JSON text gave the
// nodes: the encoder then writes block YAML and quotes only the strings
// that need it ("true", "1", "").
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// recordTable prints a record's top-level fields as "key: value" lines in
// its JSON order; nested values are compact JSON.
func recordTable(w io.Writer, v any) error {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return err
		}
	}
	keys, vals, err := objectFields(raw)
	if err != nil { // not an object: print it as JSON
		return writeJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	for i, k := range keys {
		val := strings.TrimSpace(string(vals[i]))
		var s string
		if json.Unmarshal(vals[i], &s) == nil {
			val = s
		}
		fmt.Fprintf(tw, "%s:\t%s\n", k, val)
	}
	return tw.Flush()
}

// objectFields returns an object's keys in order and their compact values.
func objectFields(raw json.RawMessage) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not an object")
	}
	var keys []string
	var vals []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			v = buf.Bytes()
		}
		keys, vals = append(keys, t.(string)), append(vals, v)
	}
	return keys, vals, nil
}
