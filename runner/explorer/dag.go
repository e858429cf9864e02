package explorer

import (
	"fmt"
	"html/template"
	"strings"
)

// dagSVG draws a run's steps as a graph: one column per dependency level,
// an arrow per dependency, each node coloured by status and linked to its
// row in the steps table.
func dagSVG(steps []StepView) template.HTML {
	if len(steps) == 0 {
		return ""
	}
	const colW, rowH, nodeW, nodeH = 170, 46, 150, 32
	rows := map[int]int{} // level -> nodes placed
	pos := make([][2]int, len(steps))
	index := map[string]int{}
	maxRow, maxLevel := 0, 0
	for i, st := range steps {
		r := rows[st.Level]
		rows[st.Level]++
		pos[i] = [2]int{st.Level*colW + 10, r*rowH + 10}
		index[st.ID] = i
		maxRow, maxLevel = max(maxRow, r), max(maxLevel, st.Level)
	}
	w, h := (maxLevel+1)*colW+10, (maxRow+1)*rowH+10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="dag" role="img" aria-label="step graph" viewBox="0 0 %d %d" width="%d" height="%d">`, w, h, w, h)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z"/></marker></defs>`)
	for i, st := range steps {
		for _, d := range st.DependsOn {
			j, ok := index[d]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" marker-end="url(#arrow)"/>`,
				pos[j][0]+nodeW, pos[j][1]+nodeH/2, pos[i][0], pos[i][1]+nodeH/2)
		}
	}
	for i, st := range steps {
		label := st.ID
		if st.Seconds != nil {
			label += fmt.Sprintf(" · %.1fs", *st.Seconds)
		}
		fmt.Fprintf(&b, `<a href="#step-%s"><g class="node %s"><rect x="%d" y="%d" width="%d" height="%d" rx="4"/><text x="%d" y="%d">%s</text><title>%s (%s): %s</title></g></a>`,
			template.HTMLEscapeString(st.ID), template.HTMLEscapeString(st.Status), pos[i][0], pos[i][1], nodeW, nodeH,
			pos[i][0]+8, pos[i][1]+20, template.HTMLEscapeString(truncate(label, 22)),
			template.HTMLEscapeString(st.ID), template.HTMLEscapeString(st.Type), template.HTMLEscapeString(st.Status))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
