package goplugin

import (
	"bytes"
	"context"
	"encoding/json"
	"html/template"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/explorer"
)

// The plugin's explorer page: /plugins/dice/rolls in `agent-env up` lists
// the dice rolled by the latest runs. A plugin page reads the stores
// through the request and returns HTML (html/template escapes it).

func init() {
	plugin.RegisterExplorerPage(explorer.PluginPage{
		Plugin: "dice", Name: "rolls", Title: "Dice rolls", Render: renderRolls,
	})
}

var rollsTmpl = template.Must(template.New("rolls").Parse(`{{if not .}}<p class="empty" id="dice-empty">No run has rolled dice yet: agent-env run dice/dice-game</p>{{else}}
<table class="docs" id="dice-rolls"><thead><tr><th>Run</th><th>Step</th><th>Die</th><th>Rolled</th></tr></thead><tbody>
{{range .}}<tr><td class="mono"><a href="/run?id={{.Run}}">{{.Run}}</a></td><td>{{.Step}}</td><td>d{{.Sides}}</td><td class="dice-value">{{.Value}}</td></tr>
{{end}}</tbody></table>{{end}}`))

type rollRow struct {
	Run, Step    string
	Sides, Value int
}

// renderRolls reads the newest 200 task instances' metadata.dice_rolls.
func renderRolls(ctx context.Context, req *explorer.PluginRequest) (template.HTML, error) {
	p, err := registry.PageRecords(ctx, req.Documents, registry.TaskInstances,
		&registry.PageQuery{Fields: []string{"context.metadata.dice_rolls"}, Limit: 200})
	if err != nil {
		return "", err
	}
	var rows []rollRow
	for _, r := range p.Records {
		var inst struct {
			Context struct {
				Metadata struct {
					DiceRolls []struct {
						Step  string `json:"step"`
						Sides int    `json:"sides"`
						Value int    `json:"value"`
					} `json:"dice_rolls"`
				} `json:"metadata"`
			} `json:"context"`
		}
		if json.Unmarshal(r.Data, &inst) != nil {
			continue
		}
		for _, d := range inst.Context.Metadata.DiceRolls {
			rows = append(rows, rollRow{Run: r.Key, Step: d.Step, Sides: d.Sides, Value: d.Value})
		}
	}
	var b bytes.Buffer
	if err := rollsTmpl.Execute(&b, rows); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // rendered by html/template
}
