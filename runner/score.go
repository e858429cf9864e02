package runner

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// MeanScore is the mean of a run's verification scores, and whether it
// has any. It is the score a run is gated on (agent-env --fail-under) and
// graded by in evals.
func (rc *RunContext) MeanScore() (float64, bool) {
	vs := rc.Verifications()
	if len(vs) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, v := range vs {
		sum += v.Score
	}
	return sum / float64(len(vs)), true
}

// FailingRow is a verifier result row that did not pass, in words.
type FailingRow struct {
	VerifierID    string `json:"verifier_id"`
	Criterion     string `json:"criterion"`
	Justification string `json:"justification,omitempty"`
}

// Text is the row as summary lines: "- [verifier] criterion" and, when
// there is one, "  why: justification", each after indent.
func (r FailingRow) Text(indent string) string {
	s := fmt.Sprintf("%s- [%s] %s\n", indent, r.VerifierID, r.Criterion)
	if r.Justification != "" {
		s += fmt.Sprintf("%s  why: %s\n", indent, r.Justification)
	}
	return s
}

// rowText is how much of a criterion or justification a summary shows.
const rowText = 200

// FailingRows lists the rows of the run's verifications that scored below
// 1 (skipped rows left out), by verifier id then row order. The criterion
// is the row's "criterion" (else its "id", else the row itself as JSON);
// the justification is its "justification" (else "reason", "error" or
// "output"); each is cut to 200 characters.
func (rc *RunContext) FailingRows() []FailingRow {
	vs := rc.Verifications()
	ids := make([]string, 0, len(vs))
	for id := range vs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []FailingRow
	for _, id := range ids {
		for _, row := range vs[id].Results {
			if row.Skipped() || row.Score() >= 1 {
				continue
			}
			out = append(out, FailingRow{VerifierID: id, Criterion: cut(criterionOf(row)), Justification: cut(firstText(row, "justification", "reason", "error", "output"))})
		}
	}
	return out
}

func criterionOf(row Row) string {
	if s := firstText(row, "criterion", "id"); s != "" {
		return s
	}
	typ, _ := row["type"].(string)
	var parts []string
	for k, v := range row {
		switch k {
		case "result", "score", "weight", "justification", "skipped", "type", "criterion_index":
		default:
			b, _ := json.Marshal(v)
			if s, ok := v.(string); ok {
				b = []byte(s)
			}
			parts = append(parts, k+"="+string(b))
		}
	}
	sort.Strings(parts)
	if typ != "" {
		return typ + ": " + strings.Join(parts, ", ")
	}
	return strings.Join(parts, ", ")
}

func firstText(row Row, keys ...string) string {
	for _, k := range keys {
		switch v := row[k].(type) {
		case nil:
		case string:
			if v != "" {
				return v
			}
		default:
			return fmt.Sprint(v)
		}
	}
	return ""
}

// cut shortens s to rowText characters on one line.
func cut(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= rowText {
		return s
	}
	return string([]rune(s)[:rowText]) + "…"
}
