package explorer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"sort"
	"strings"
)

// jsonTreeMaxNodes bounds a rendered tree: a large data plane shows its
// first nodes and says how many were left out, instead of a page the
// browser chokes on (the API answer has it whole).
const jsonTreeMaxNodes = 5000

// jsonTree renders a decoded JSON value as nested <details> lists: objects
// and arrays fold, the first two levels open. Every string is escaped.
func jsonTree(v any) template.HTML {
	var b strings.Builder
	n := 0
	b.WriteString(`<div class="jsontree">`)
	writeJSONNode(&b, "", v, 0, &n)
	if n > jsonTreeMaxNodes {
		fmt.Fprintf(&b, `<p class="muted">… %d more values not shown (the API answer has them all).</p>`, n-jsonTreeMaxNodes)
	}
	b.WriteString(`</div>`)
	return template.HTML(b.String()) //nolint:gosec // every value is escaped by writeJSONNode
}

func writeJSONNode(b *strings.Builder, key string, v any, depth int, n *int) {
	*n++
	if *n > jsonTreeMaxNodes {
		return
	}
	label := ""
	if key != "" {
		label = `<span class="jkey">` + html.EscapeString(key) + `</span>: `
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		open := ""
		if depth < 2 {
			open = " open"
		}
		fmt.Fprintf(b, `<details%s><summary>%s{%d}</summary><ul>`, open, label, len(x))
		for _, k := range keys {
			b.WriteString("<li>")
			writeJSONNode(b, k, x[k], depth+1, n)
			b.WriteString("</li>")
		}
		b.WriteString("</ul></details>")
	case []any:
		open := ""
		if depth < 2 {
			open = " open"
		}
		fmt.Fprintf(b, `<details%s><summary>%s[%d]</summary><ul>`, open, label, len(x))
		for i, e := range x {
			b.WriteString("<li>")
			writeJSONNode(b, fmt.Sprint(i), e, depth+1, n)
			b.WriteString("</li>")
		}
		b.WriteString("</ul></details>")
	default:
		// Unescaped JSON (no \u003c), then escaped once for HTML.
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(x); err != nil {
			enc.Reset()
			fmt.Fprint(&enc, x)
		}
		class := "jval"
		if _, ok := x.(string); ok {
			class = "jstr"
		}
		fmt.Fprintf(b, `%s<span class="%s">%s</span>`, label, class, html.EscapeString(strings.TrimSuffix(enc.String(), "\n")))
	}
}
