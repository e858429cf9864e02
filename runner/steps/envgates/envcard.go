package envgates

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/agentenv/agentenv/protocol"
	"github.com/agentenv/agentenv/runner"
)

// TypeEnvCard is verify_env_card's type name.
const TypeEnvCard = "verify_env_card"

// requiredCardFields are the card keys the reference's gate requires.
var requiredCardFields = []string{"name", "protocolVersion", "url", "preferredTransport", "capabilities"}

// EnvCardInfo registers verify_env_card.
func EnvCardInfo() runner.StepInfo {
	return runner.StepInfo{Type: TypeEnvCard, New: func() runner.Step { return new(EnvCard) }}
}

// EnvCard is verify_env_card: the deployed env's card is served, decodes,
// holds the required fields, and its name matches the env's
// environment_name. Details go to metadata.validated_environment_card.
type EnvCard struct {
	EnvID     string `json:"env_id"`
	EnvStepID string `json:"env_step_id,omitempty"` // ours: which deploy_env when an env is deployed twice
}

var (
	_ runner.Step         = (*EnvCard)(nil)
	_ runner.Validator    = (*EnvCard)(nil)
	_ runner.EntityRefser = (*EnvCard)(nil)
)

// EntityRefs implements runner.EntityRefser.
func (c *EnvCard) EntityRefs() []runner.EntityRef { return []runner.EntityRef{runner.EnvRef("env_id")} }

// Validate implements runner.Validator.
func (c *EnvCard) Validate() error {
	if c.EnvID == "" {
		return runner.Required("env_id")
	}
	return nil
}

// Run implements runner.Step.
func (c *EnvCard) Run(ctx context.Context, rc *runner.RunContext) error {
	e, err := rc.EnvEntry(c.EnvID, c.EnvStepID)
	if err != nil {
		return fmt.Errorf("env_id: %w", err)
	}
	url := cardURL(e)
	details := map[string]any{"env_id": c.EnvID, "card_url": url, "accessible": false, "name_check": nil}
	var problems []string
	raw, err := getJSON(ctx, url)
	if err != nil {
		problems = append(problems, err.Error())
		record(rc, GateEnvCard, "validated_environment_card", details, problems)
		return nil
	}
	details["accessible"] = true
	var card map[string]any
	if err := json.Unmarshal(raw, &card); err != nil {
		problems = append(problems, fmt.Sprintf("card does not decode as an object: %v", err))
	}
	var missing []string
	for _, k := range requiredCardFields {
		if v, ok := card[k]; !ok || v == nil || v == "" {
			missing = append(missing, k)
		}
	}
	details["missing_fields"] = missing
	if len(missing) > 0 {
		problems = append(problems, "card lacks required fields: "+strings.Join(missing, ", "))
	}
	if _, ok := card["capabilities"].(map[string]any); card["capabilities"] != nil && !ok {
		problems = append(problems, "card capabilities is not an object")
	}
	if want, _ := e["environment_name"].(string); want != "" {
		got, _ := card["name"].(string)
		details["name_check"] = map[string]any{"expected": want, "actual": got, "matches": got == want}
		if got != want {
			problems = append(problems, fmt.Sprintf("card name %q does not match environment_name %q", got, want))
		}
	}
	details["environment_card"] = card
	record(rc, GateEnvCard, "validated_environment_card", details, problems)
	return nil
}

// cardURL is where the deployed env's card is served: the entry's
// environment_card_url, else the gateway's well-known path.
func cardURL(e map[string]any) string {
	if u, _ := e["environment_card_url"].(string); u != "" {
		return u
	}
	gw, _ := e["gateway_url"].(string)
	return strings.TrimRight(gw, "/") + protocol.EnvCardPath
}

// getJSON GETs url and returns a 200 JSON body.
func getJSON(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET card %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET card %s: %w", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("GET card %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET card %s: HTTP %d", url, resp.StatusCode)
	}
	return b, nil
}
