package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestArtifactSkillCommands(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "tidy", "SKILL.md"), "---\nname: tidy\ndescription: Keep lists tidy.\n---\n# Tidy\n")
	writeFile(t, filepath.Join(dir, "tidy", "scripts", "sort.sh"), "#!/bin/sh\nsort -u\n")
	code, out, stderr := c.run("artifact", "skill", "put", "tidy", "--skill-dir", filepath.Join(dir, "tidy"))
	if code != 0 || !strings.HasPrefix(out, "Created SkillArtifact: id=tidy version=1 name=tidy spec_version=0.1 skill_files_id=tidy-files:1") {
		t.Fatalf("put: exit %d %q %q", code, out, stderr)
	}
	// --id is an alias of the argument; --json prints the record.
	code, out, _ = c.run("artifact", "skill", "put", "--id", "tidy", "--skill-dir", filepath.Join(dir, "tidy"), "--json")
	var rec map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || rec["version"] != 2.0 || rec["skill_name"] != "tidy" || rec["description"] != "Keep lists tidy." {
		t.Fatalf("put --id --json: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("artifact", "skill", "get", "tidy:1")
	if code != 0 || !strings.Contains(out, `"skill_files_id": "tidy-files"`) || !strings.Contains(out, `"version": 1`) {
		t.Errorf("get: exit %d\n%s", code, out)
	}
	outDir := filepath.Join(dir, "out")
	code, out, _ = c.run("artifact", "skill", "get", "tidy", "--output-dir", outDir)
	if code != 0 || !strings.Contains(out, "Wrote "+filepath.Join(outDir, "SKILL.md")) || !strings.Contains(out, "2 file(s)") {
		t.Errorf("get --output-dir: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("artifact", "skill", "list")
	if code != 0 || !strings.Contains(out, "NAME") || !regexpLine(out, `^tidy\s+2\s+tidy\s`) {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	writeFile(t, filepath.Join(dir, "bad", "SKILL.md"), "---\nname: tidy\n---\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"artifact", "skill", "put", "tidy", "--skill-dir", filepath.Join(dir, "bad")}, `invalid SKILL.md description: is required`},
		{[]string{"artifact", "skill", "put", "other", "--skill-dir", filepath.Join(dir, "tidy")}, `must equal the skill id's last segment "other"`},
		{[]string{"artifact", "skill", "put", "tidy"}, "--skill-dir is required"},
		{[]string{"artifact", "skill", "put", "a", "--id", "b", "--skill-dir", dir}, `the artifact id is given twice`},
		{[]string{"artifact", "skill", "get", "tidy-files"}, `is a "file_artifact_universe", not a "skill"`},
	} {
		code, _, stderr := c.run(tc.args...)
		if code != 1 || !strings.HasPrefix(stderr, "Error: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestArtifactCLIAndVMImageCommands(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	script := writeFile(t, filepath.Join(dir, "hello.sh"), "#!/bin/sh\necho hello\n")
	code, out, stderr := c.run("artifact", "cli", "put", "hello", "--file", script)
	if code != 0 || !strings.HasPrefix(out, "Created CliArtifact: id=hello version=1 command_name=hello.sh entrypoint=hello.sh") {
		t.Fatalf("cli put: exit %d %q %q", code, out, stderr)
	}
	outDir := filepath.Join(dir, "out")
	if code, out, _ = c.run("artifact", "cli", "get", "hello", "--output-dir", outDir, "--json"); code != 0 || !strings.Contains(out, `"paths"`) {
		t.Errorf("cli get: exit %d\n%s", code, out)
	}
	if st, err := os.Stat(filepath.Join(outDir, "hello.sh")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("entrypoint written %v %v", st, err)
	}
	if code, out, _ = c.run("artifact", "cli", "list"); code != 0 || !regexpLine(out, `^hello\s+1\s+hello.sh\s`) {
		t.Errorf("cli list: exit %d\n%s", code, out)
	}
	if code, _, stderr = c.run("artifact", "cli", "put", "x", "--file", script, "--cli-dir", dir); code != 1 || !strings.Contains(stderr, "exactly one of --cli-dir or --file") {
		t.Errorf("cli put with both: exit %d %q", code, stderr)
	}

	disk := writeFile(t, filepath.Join(dir, "base.raw"), strings.Repeat("\x00disk", 1000))
	code, out, stderr = c.run("artifact", "vm-image", "put", "base", "--file", disk, "--os", "linux", "--disk-size-gb", "20")
	if code != 0 || out != "Created VMImageArtifact: id=base version=1 image_name=base.raw file=base.raw size=5000\n" {
		t.Fatalf("vm-image put: exit %d %q %q", code, out, stderr)
	}
	if code, out, _ = c.run("artifact", "vm-image", "put", "--id", "macos", "--image-name", "tahoe-cua", "--json"); code != 0 || !strings.Contains(out, `"image_name": "tahoe-cua"`) {
		t.Errorf("vm-image put --image-name: exit %d\n%s", code, out)
	}
	if code, out, _ = c.run("artifact", "vm-image", "get", "base", "--output-dir", outDir); code != 0 || !strings.Contains(out, "Wrote "+filepath.Join(outDir, "base.raw")) {
		t.Errorf("vm-image get: exit %d\n%s", code, out)
	}
	if code, out, _ = c.run("artifact", "vm-image", "list", "--json"); code != 0 || strings.Count(out, `"type": "vm_image"`) != 2 {
		t.Errorf("vm-image list --json: exit %d\n%s", code, out)
	}
	if code, _, stderr = c.run("artifact", "vm-image", "put", "empty"); code != 1 || !strings.Contains(stderr, "give a disk image file, an image_name or an ecr_url") {
		t.Errorf("vm-image put with nothing: exit %d %q", code, stderr)
	}
}

// regexpLine reports whether some line of out matches re.
func regexpLine(out, re string) bool {
	return regexp.MustCompile(`(?m)` + re).MatchString(out)
}
