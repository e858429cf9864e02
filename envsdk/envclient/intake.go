package envclient

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/agentenv/agentenv/protocol"
)

// IntakeFitCheck is the runner's preflight: does
// this data.json fit what the env declares it accepts? It returns
// human-readable issues; none means it fits or the env makes no claim
// (decl nil). format "" means "json". Extra fields and top-level values
// that are not lists are tolerated.
func IntakeFitCheck(decl *protocol.Intake, data json.RawMessage, format string) []string {
	if decl == nil {
		return nil
	}
	if format == "" {
		format = "json"
	}
	var f *protocol.IntakeFormat
	var accepted []string
	for i := range decl.Add {
		a := &decl.Add[i]
		accepted = append(accepted, fmt.Sprintf("part=%s format=%s", a.Part, a.Format))
		if f == nil && a.Part == protocol.PartKindData && a.Format == format {
			f = a
		}
	}
	if f == nil {
		return []string{fmt.Sprintf("data/add does not accept part=data format=%s (accepted: [%s])", format, strings.Join(accepted, ", "))}
	}
	if len(f.Tables) == 0 {
		return nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return []string{"data is not a JSON object"}
	}
	tables := make([]string, 0, len(f.Tables))
	for t := range f.Tables {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var issues []string
	for _, k := range keys {
		var rows []map[string]json.RawMessage
		if json.Unmarshal(top[k], &rows) != nil {
			continue // not a list of objects: tolerated
		}
		schema, ok := f.Tables[k]
		if !ok {
			issues = append(issues, fmt.Sprintf("table %q is not accepted (declared tables: %s)", k, strings.Join(tables, ", ")))
			continue
		}
		var s struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(schema, &s)
		for i, row := range rows {
			for _, req := range s.Required {
				if _, ok := row[req]; !ok {
					issues = append(issues, fmt.Sprintf("%s[%d]: missing required field %q", k, i, req))
				}
			}
		}
	}
	return issues
}
