// Package goplugin is an example Go plugin for agent-env. It adds a step
// type (roll_dice), a bundle that uses it (dice/dice-game) and a command
// (agent-env dice roll). Build it into agent-env with
//
//	agent-env plugin add ./examples/plugins/goplugin
//
// and run `agent-env run dice/dice-game`. The whole plugin is the init
// function below: one plugin.Register call.
package goplugin

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/agentenv/agentenv/plugin"
	"github.com/agentenv/agentenv/runner"
)

//go:embed bundles
var bundleFiles embed.FS

// defaultSides comes from [plugins.dice] default_sides in config.toml.
var defaultSides = 6

func init() {
	bundles, _ := fs.Sub(bundleFiles, "bundles") // a constant path: cannot fail
	plugin.Register(plugin.Plugin{
		Name:      "dice",
		Version:   "v0.1.0",
		Module:    "github.com/agentenv/agentenv/examples/plugins/goplugin",
		Steps:     []runner.StepInfo{{Type: "roll_dice", New: func() runner.Step { return new(Roll) }}},
		Commands:  []func() *cobra.Command{newDiceCmd},
		Bundles:   bundles,
		Configure: configure,
	})
}

func configure(settings map[string]any) error {
	switch v := settings["default_sides"].(type) {
	case nil:
	case int64:
		if v < 2 {
			return fmt.Errorf("default_sides must be at least 2, got %d", v)
		}
		defaultSides = int(v)
	default:
		return fmt.Errorf("default_sides must be a whole number, got %v", v)
	}
	return nil
}

// Roll is the roll_dice step: it rolls one die, deterministically from the
// task's seed, records the roll in the context metadata and scores it.
type Roll struct {
	Sides      int    `json:"sides,omitempty"`
	AtLeast    int    `json:"at_least,omitempty"`
	VerifierID string `json:"verifier_id"`
}

// Validate checks the fields when the task is created.
func (r *Roll) Validate() error {
	if r.VerifierID == "" {
		return runner.Required("verifier_id")
	}
	if r.Sides < 0 || r.Sides == 1 {
		return runner.Invalid("sides", "a die has at least 2 sides, got %d", r.Sides)
	}
	return nil
}

// Run rolls and writes metadata.dice_rolls and a verification.
func (r *Roll) Run(ctx context.Context, rc *runner.RunContext) error {
	sides := r.Sides
	if sides == 0 {
		sides = defaultSides
	}
	value := roll(rc.Seed()["dice"]+"/"+rc.StepID(), sides)
	rc.AppendMetadata("dice_rolls", map[string]any{"step": rc.StepID(), "sides": sides, "value": value})
	pass := value >= r.AtLeast
	score := 0.0
	if pass {
		score = 1
	}
	rc.SetVerification(r.VerifierID, runner.Verification{Score: score,
		Results: []runner.Row{{"criterion": fmt.Sprintf("at least %d", r.AtLeast), "result": pass, "value": value}}})
	return nil
}

func roll(seed string, sides int) int {
	h := fnv.New32a()
	h.Write([]byte(seed))
	return int(h.Sum32()%uint32(sides)) + 1
}

func newDiceCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "dice", Short: "Roll dice (the example Go plugin)"}
	var sides int
	var seed string
	rollCmd := &cobra.Command{Use: "roll", Short: "Roll one die", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sides < 2 {
				sides = defaultSides
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rolled %d (d%d, seed %q)\n", roll(seed, sides), sides, seed)
			return nil
		}}
	rollCmd.Flags().IntVar(&sides, "sides", 0, "sides of the die (default [plugins.dice] default_sides, else 6)")
	rollCmd.Flags().StringVar(&seed, "seed", "", "seed of the roll")
	cmd.AddCommand(rollCmd)
	return cmd
}
