package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what `agent-env version` reports.
type buildVersion struct {
	Version  string `json:"version"`               // versionString: -ldflags, module version or "dev"
	Module   string `json:"module"`                // the main module's version ("(devel)" for a local build)
	Commit   string `json:"commit,omitempty"`      // vcs.revision; empty with -buildvcs=false
	Modified bool   `json:"modified,omitempty"`    // vcs.modified
	Time     string `json:"commit_time,omitempty"` // vcs.time
	Go       string `json:"go"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: versionString(), Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module = bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "vcs.time":
			v.Time = s.Value
		}
	}
	return v
}

func newVersionCmd(d *deps) *cobra.Command {
	var out *outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, module version and VCS commit of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readBuildVersion()
			return out.print(d.stdout, v, func(w io.Writer) error {
				fmt.Fprintf(w, "agent-env %s\n", v.Version)
				if v.Module != "" {
					fmt.Fprintf(w, "module:  %s\n", v.Module)
				}
				if v.Commit != "" {
					mod := ""
					if v.Modified {
						mod = " (modified)"
					}
					fmt.Fprintf(w, "commit:  %s%s\n", v.Commit, mod)
				} else {
					fmt.Fprintln(w, "commit:  unknown (built without VCS information)")
				}
				_, err := fmt.Fprintf(w, "go:      %s\n", v.Go)
				return err
			})
		},
	}
	out = addOutputFlag(cmd, formatTable)
	return cmd
}
