package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// outputCmd is a command that prints rec through the output flag.
func outputCmd(rec any, def string) (*cobra.Command, *bytes.Buffer) {
	var buf bytes.Buffer
	cmd := &cobra.Command{Use: "x", SilenceErrors: true, SilenceUsage: true}
	out := addOutputFlag(cmd, def)
	cmd.RunE = func(*cobra.Command, []string) error {
		return out.print(&buf, rec, func(w io.Writer) error { _, err := io.WriteString(w, "TABLE\n"); return err })
	}
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	return cmd, &buf
}

func TestOutputFlag(t *testing.T) {
	rec := struct {
		Name    string            `json:"name"`
		Version int               `json:"version"`
		Flag    string            `json:"flag"`
		Tags    []string          `json:"tags"`
		Meta    map[string]string `json:"meta"`
	}{"q3", 2, "true", []string{"a"}, map[string]string{"k": ""}}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "TABLE\n"},
		{[]string{"-o", "table"}, "TABLE\n"},
		{[]string{"--json"}, "{\n  \"name\": \"q3\",\n  \"version\": 2,\n  \"flag\": \"true\",\n  \"tags\": [\n    \"a\"\n  ],\n  \"meta\": {\n    \"k\": \"\"\n  }\n}\n"},
		{[]string{"-o", "json", "--json"}, "{\n  \"name\": \"q3\""},
		{[]string{"--output", "YAML"}, "name: q3\nversion: 2\nflag: \"true\"\ntags:\n  - a\nmeta:\n  k: \"\"\n"},
	} {
		cmd, buf := outputCmd(rec, formatTable)
		cmd.SetArgs(tc.args)
		if err := cmd.Execute(); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !strings.HasPrefix(buf.String(), tc.want) {
			t.Errorf("%v:\n%s\nwant:\n%s", tc.args, buf, tc.want)
		}
	}
	for args, want := range map[string]string{
		"-o yml":         `unknown format "yml"; did you mean "yaml"?`,
		"-o yaml --json": "--json means -o json; it cannot be combined with -o yaml",
		"--json -o yaml": "--json means -o json; it cannot be combined with -o yaml",
	} {
		cmd, _ := outputCmd(rec, formatTable)
		cmd.SetArgs(strings.Fields(args))
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", args, err, want)
		}
	}
}

// Without a table function a record prints as key: value lines.
func TestRecordTable(t *testing.T) {
	var buf bytes.Buffer
	raw := json.RawMessage(`{"id":"e1","version":3,"image":{"ref":"x"},"note":"a b"}`)
	if err := recordTable(&buf, raw); err != nil {
		t.Fatal(err)
	}
	want := "id:      e1\nversion: 3\nimage:   {\"ref\":\"x\"}\nnote:    a b\n"
	if buf.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}
