package triggers

import (
	"regexp"
	"strings"

	"github.com/agentenv/agentenv/internal/jsonvalue"
)

// Templating. ${args.<path>} and ${result.<path>} read
// the provoking call (action triggers only); ${name} reads a check binding;
// a trailing ? marks a placeholder optional.

var (
	varRe      = regexp.MustCompile(`\$\{([\w.\[\]*]+\??)\}`)
	varWholeRe = regexp.MustCompile(`^\$\{([\w.\[\]*]+\??)\}$`)
	// varLooseRe finds anything placeholder-shaped, so registration can
	// refuse shapes the strict pattern would leave verbatim.
	varLooseRe = regexp.MustCompile(`\$\{[^{}]*\}?`)
	wordRe     = regexp.MustCompile(`^\w+$`)
	spaceRe    = regexp.MustCompile(`\s+`)
)

// callCtx is the provoking call a fire templates against; nil for state and
// time triggers.
type callCtx struct {
	args   any
	result any
}

type templateError struct{ msg string }

func (e *templateError) Error() string { return e.msg }

// drop marks an unresolved optional whole value: its key or element goes.
type dropT struct{}

var drop = &dropT{}

func ctxPath(name string) (root, path string) {
	head, rest, _ := strings.Cut(name, ".")
	if head == "args" || head == "result" {
		return head, rest
	}
	return "", ""
}

func ctxLookup(name string, bindings map[string]any, cc *callCtx) (bool, any) {
	name = strings.TrimSuffix(name, "?")
	if v, ok := bindings[name]; ok {
		return true, v
	}
	root, path := ctxPath(name)
	if root == "" || cc == nil {
		return false, nil
	}
	rv := cc.args
	if root == "result" {
		rv = cc.result
	}
	if path == "" {
		return rv != nil, rv
	}
	m, ok := rv.(map[string]any)
	if !ok {
		return false, nil
	}
	v := jsonvalue.Lookup(m, path)
	return v != nil, v
}

func resolve(name, literal string, bindings map[string]any, cc *callCtx) (bool, any, error) {
	found, v := ctxLookup(name, bindings, cc)
	if !found && !strings.HasSuffix(name, "?") {
		if root, _ := ctxPath(name); root != "" {
			return false, nil, &templateError{msg: "unresolved placeholder " + literal}
		}
	}
	return found, v, nil
}

// render substitutes placeholders through maps and lists.
func render(v any, bindings map[string]any, cc *callCtx) (any, error) {
	out, err := renderValue(v, bindings, cc)
	if err != nil {
		return nil, err
	}
	if out == drop {
		return v, nil
	}
	return out, nil
}

func renderValue(v any, bindings map[string]any, cc *callCtx) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValue(e, bindings, cc)
			if err != nil {
				return nil, err
			}
			if r != drop {
				out[k] = r
			}
		}
		return out, nil
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			r, err := renderValue(e, bindings, cc)
			if err != nil {
				return nil, err
			}
			if r != drop {
				out = append(out, r)
			}
		}
		return out, nil
	case string:
		return renderString(x, bindings, cc)
	}
	return v, nil
}

func renderString(s string, bindings map[string]any, cc *callCtx) (any, error) {
	if m := varWholeRe.FindStringSubmatch(s); m != nil {
		name := m[1]
		found, v, err := resolve(name, s, bindings, cc)
		if err != nil {
			return nil, err
		}
		if !found {
			if strings.HasSuffix(name, "?") {
				return drop, nil
			}
			return s, nil
		}
		if root, _ := ctxPath(strings.TrimSuffix(name, "?")); root != "" {
			return v, nil
		}
		return bindingText(v), nil
	}
	var firstErr error
	out := varRe.ReplaceAllStringFunc(s, func(lit string) string {
		name := varRe.FindStringSubmatch(lit)[1]
		found, v, err := resolve(name, lit, bindings, cc)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return lit
		}
		if !found {
			if strings.HasSuffix(name, "?") {
				return ""
			}
			return lit
		}
		if str, ok := v.(string); ok {
			return str
		}
		return jsonvalue.Dumps(v)
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// stringsIn lists every string value (not key) in v.
func stringsIn(v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for _, k := range sortedKeys(x) {
			out = append(out, stringsIn(x[k])...)
		}
		return out
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, stringsIn(e)...)
		}
		return out
	case string:
		return []string{x}
	}
	return nil
}

// validatePlaceholders refuses, at registration, placeholders the engine
// could not resolve and context placeholders outside action triggers.
func validatePlaceholders(v any, where string, allowCtx bool) error {
	texts := stringsIn(v)
	for _, t := range texts {
		for _, m := range varLooseRe.FindAllString(t, -1) {
			if !varWholeRe.MatchString(m) {
				return specErrorf("%s: %s is not a placeholder the engine can resolve; expected ${args.<path>}, ${result.<path>} or ${<check binding>}", where, pyQuote(m))
			}
		}
	}
	for _, t := range texts {
		for _, m := range varRe.FindAllStringSubmatch(t, -1) {
			name := strings.TrimSuffix(m[1], "?")
			root, path := ctxPath(name)
			switch {
			case root == "":
				if !wordRe.MatchString(name) {
					return specErrorf("%s: placeholder ${%s} must be a check binding name or an args./result. path", where, name)
				}
			case !allowCtx:
				return specErrorf("%s: ${%s} needs a provoking tool call; only action triggers carry args/result", where, name)
			case path != "":
				if err := validatePath(path, where); err != nil {
					return err
				}
			case strings.Contains(name, "."):
				return specErrorf("%s: placeholder ${%s} has an empty path", where, name)
			}
		}
	}
	return nil
}

// isCtxAttempt reports whether placeholder-shaped text in an nl instruction
// reaches for the provoking call (whitespace aside); ${HOME} is prose.
func isCtxAttempt(token string) bool {
	c := spaceRe.ReplaceAllString(token, "")
	return strings.HasPrefix(c, "${args.") || strings.HasPrefix(c, "${result.")
}
