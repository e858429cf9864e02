package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Script is what the agent does.
type Script struct {
	// Rules are tried in order; the first whose When matches the prompt runs.
	Rules []Rule `json:"rules"`
	// Default runs when no rule matches; without it the task fails with
	// error code "no_matching_rule".
	Default *Rule `json:"default,omitempty"`
}

// Rule is one scripted reaction.
type Rule struct {
	When  *Match `json:"when,omitempty"`
	Steps []Step `json:"steps,omitempty"`
	// Reply is the answer; "{{prompt}}" and "{{result N}}" (the text of
	// step N's result) are substituted.
	Reply string `json:"reply,omitempty"`
	// StructuredOutput is returned as the structured_output data part.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	// Fail ends the task as an expected failure instead of replying.
	Fail *ScriptFailure `json:"fail,omitempty"`
}

// Match selects rules by prompt text; set exactly one field (none: always).
type Match struct {
	Contains string `json:"contains,omitempty"`
	Equals   string `json:"equals,omitempty"`
	Regex    string `json:"regex,omitempty"`
	re       *regexp.Regexp
}

// Step is one tool call.
type Step struct {
	Tool string `json:"tool"`
	// Server is the mcp-config name; empty means the only server, or the
	// one listing the tool.
	Server    string          `json:"server,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Peer, instead of Tool, sends Message to that peer agent over A2A
	// (peer-agents); its reply text is the step's result. Message may use
	// "{{prompt}}" and "{{result N}}" of earlier steps.
	Peer    string `json:"peer,omitempty"`
	Message string `json:"message,omitempty"`
}

// ScriptFailure is an expected failure.
type ScriptFailure struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

var resultRef = regexp.MustCompile(`\{\{result (\d+)\}\}`)

// ParseScript decodes a script strictly and validates it.
func ParseScript(b []byte) (*Script, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	rules := s.Rules
	if s.Default != nil {
		rules = append(append([]Rule(nil), s.Rules...), *s.Default)
	}
	for i := range rules {
		r := &rules[i]
		where := fmt.Sprintf("rules[%d]", i)
		if i == len(s.Rules) {
			where = "default"
		}
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("script: %s.%w", where, err)
		}
	}
	for i := range s.Rules {
		if m := s.Rules[i].When; m != nil && m.Regex != "" {
			m.re = regexp.MustCompile(m.Regex) // validated above
		}
	}
	return &s, nil
}

func (r *Rule) validate() error {
	if m := r.When; m != nil {
		n := 0
		for _, v := range []string{m.Contains, m.Equals, m.Regex} {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			return errors.New("when: set exactly one of contains, equals, regex")
		}
		if m.Regex != "" {
			if _, err := regexp.Compile(m.Regex); err != nil {
				return errors.New("when.regex: invalid regular expression")
			}
		}
	}
	for j, st := range r.Steps {
		if st.Peer != "" {
			if st.Tool != "" || st.Message == "" {
				return fmt.Errorf("steps[%d]: a peer step has peer and message and no tool", j)
			}
			for _, m := range resultRef.FindAllStringSubmatch(st.Message, -1) {
				if n, _ := strconv.Atoi(m[1]); n >= j {
					return fmt.Errorf("steps[%d].message: {{result %d}} names no earlier step", j, n)
				}
			}
			continue
		}
		if strings.TrimSpace(st.Tool) == "" {
			return fmt.Errorf("steps[%d].tool: required", j)
		}
		if a := bytes.TrimSpace(st.Arguments); len(a) > 0 && a[0] != '{' {
			return fmt.Errorf("steps[%d].arguments: must be an object", j)
		}
	}
	if (r.Fail == nil) == (r.Reply == "" && r.StructuredOutput == nil) {
		return errors.New("reply: give a reply (or structured_output) or a fail, not both")
	}
	if r.Fail != nil && (r.Fail.Code == "" || r.Fail.Message == "") {
		return errors.New("fail: code and message are required")
	}
	for _, m := range resultRef.FindAllStringSubmatch(r.Reply, -1) {
		if n, _ := strconv.Atoi(m[1]); n >= len(r.Steps) {
			return fmt.Errorf("reply: {{result %d}} names no step", n)
		}
	}
	return nil
}

func (s *Script) match(prompt string) *Rule {
	for i := range s.Rules {
		r := &s.Rules[i]
		m := r.When
		switch {
		case m == nil,
			m.Contains != "" && strings.Contains(prompt, m.Contains),
			m.Equals != "" && prompt == m.Equals,
			m.re != nil && m.re.MatchString(prompt):
			return r
		}
	}
	return s.Default
}

func render(reply, prompt string, results []string) string {
	out := resultRef.ReplaceAllStringFunc(reply, func(ref string) string {
		n, _ := strconv.Atoi(resultRef.FindStringSubmatch(ref)[1])
		return results[n]
	})
	return strings.ReplaceAll(out, "{{prompt}}", prompt)
}

// FromEnv builds the agent with the startup script of the environment.
func FromEnv() (*Agent, error) {
	raw := os.Getenv("SCRIPTED_AGENT_SCRIPT")
	if path := os.Getenv("SCRIPTED_AGENT_SCRIPT_FILE"); raw == "" && path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("SCRIPTED_AGENT_SCRIPT_FILE: %w", err)
		}
		raw = string(b)
	}
	a := &Agent{}
	if raw != "" {
		if _, err := ParseScript([]byte(raw)); err != nil {
			return nil, err
		}
		a.Default = json.RawMessage(raw)
	}
	return a, nil
}
