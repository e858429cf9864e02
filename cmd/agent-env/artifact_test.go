package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestArtifactFile(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "notes.txt"), "first\n")
	code, out, stderr := c.run("artifact", "file", "put", f, "--id", "notes", "--description", "my notes")
	if code != 0 || out != "Created FileArtifact: id=notes version=1 filename=notes.txt size=6\n" || stderr != "" {
		t.Fatalf("put: exit %d %q %q", code, out, stderr)
	}
	writeFile(t, f, "second!\n")
	code, out, _ = c.run("artifact", "file", "put", f, "--id", "notes", "--filename", "data/n.txt", "--json")
	var doc struct {
		ID, Type, Filename, Description string
		Version                         int
		S3URL                           string `json:"s3_url"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.ID != "notes" || doc.Version != 2 || doc.Type != "file" ||
		doc.Filename != "data/n.txt" || !strings.HasPrefix(doc.S3URL, "file://") {
		t.Fatalf("put --json: exit %d\n%s", code, out)
	}

	code, out, _ = c.run("artifact", "file", "get", "--id", "notes:1")
	if code != 0 || !strings.Contains(out, `"description": "my notes"`) || !strings.Contains(out, `"version": 1`) {
		t.Errorf("get notes:1: exit %d\n%s", code, out)
	}
	outDir := filepath.Join(dir, "out")
	code, out, _ = c.run("artifact", "file", "get", "--id", "notes", "--output-dir", outDir)
	written := filepath.Join(outDir, "data", "n.txt")
	if code != 0 || out != "Wrote "+written+" (id=notes version=2, 8 bytes)\n" || string(mustRead(t, written)) != "second!\n" {
		t.Errorf("get --output-dir: exit %d %q", code, out)
	}
	code, out, _ = c.run("artifact", "file", "get", "--id", "notes", "--version", "1", "--output-dir", filepath.Join(dir, "v1"), "--json")
	if code != 0 || !strings.Contains(out, `"path": "`+filepath.Join(dir, "v1", "notes.txt")+`"`) {
		t.Errorf("get --version 1 --json: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("artifact", "get", "--id", "notes")
	if code != 0 || !strings.Contains(out, `"filename": "data/n.txt"`) {
		t.Errorf("artifact get: exit %d\n%s", code, out)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"artifact", "file", "get", "--id", "notes:9"}, "Error: Artifact notes version=9 not found\n"},
		{[]string{"artifact", "file", "get", "--id", "notes:1", "--version", "2"}, "Error: --id notes:1 and --version 2 disagree\n"},
		{[]string{"artifact", "file", "put", filepath.Join(dir, "missing.txt"), "--id", "x"}, "Error: open " + filepath.Join(dir, "missing.txt") + ": no such file or directory\n"},
		{[]string{"artifact", "file", "put", f}, "Error: required flag(s) \"id\" not set\n"},
		{[]string{"artifact", "file", "put", f, "--id", "@other/x"}, "Error: "},
	} {
		code, _, stderr := c.run(tc.args...)
		if code != 1 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestArtifactEnvironment(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	items := writeFile(t, filepath.Join(dir, "items.json"), `{"items":[]}`)
	users := writeFile(t, filepath.Join(dir, "users.json"), `{"users":[]}`)
	code, out, stderr := c.run("artifact", "environment", "put", items, "--id", "items-data", "--environment-name", "items")
	if code != 0 || out != "Created file artifact: id=items-data-file version=1\nCreated EnvironmentArtifact: id=items-data version=1 environment_name=items\n" {
		t.Fatalf("environment put: exit %d %q %q", code, out, stderr)
	}
	code, out, _ = c.run("artifact", "environment", "put", users, "--id", "users-data", "--environment-name", "users", "--json")
	var env struct {
		Type            string `json:"type"`
		EnvironmentName string `json:"environment_name"`
		ServiceName     string `json:"service_name"`
		FileArtifactRef struct {
			ID      string `json:"id"`
			Version int    `json:"version"`
		} `json:"file_artifact_ref"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &env) != nil || env.Type != "environment" || env.EnvironmentName != "users" ||
		env.ServiceName != "users" || env.FileArtifactRef.ID != "users-data-file" {
		t.Fatalf("environment put --json: exit %d\n%s", code, out)
	}
	code, _, stderr = c.run("artifact", "environment", "put", items, "--id", "x")
	if code != 1 || stderr != "Error: required flag(s) \"environment-name\" not set\n" {
		t.Errorf("no --environment-name: %d %q", code, stderr)
	}

	code, out, _ = c.run("artifact", "environment-universe", "put", "--id", "shop",
		"--environment-artifact", "items-data", "--environment-artifact", "users-data:1", "--metadata", "readme=items-data-file")
	if code != 0 || out != "Created EnvironmentUniverseArtifact: id=shop version=1 environments=2 (items-data:1, users-data:1)\n" {
		t.Fatalf("universe put: exit %d %q", code, out)
	}
	code, out, _ = c.run("artifact", "environment-universe", "put", "--id", "shop", "--environment-artifact", "items-data", "--json")
	if code != 0 || !strings.Contains(out, `"version": 2`) || !strings.Contains(out, `"environment_artifact_refs"`) {
		t.Errorf("universe put --json: exit %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--environment-artifact", "items-data", "--environment-artifact", "items-data"}, "environment items is already given by items-data:1"},
		{[]string{"--environment-artifact", "nope"}, "Artifact nope version=latest not found"},
		{[]string{"--environment-artifact", "items-data-file"}, `is a "file", not a "environment"`},
		{[]string{"--environment-artifact", "items-data:x"}, `--environment-artifact "items-data:x": `},
		{[]string{"--environment-artifact", "items-data", "--metadata", "noequals"}, `--metadata "noequals": want NAME=ID[:VERSION]`},
		{nil, `required flag(s) "environment-artifact" not set`},
	} {
		code, _, stderr := c.run(append([]string{"artifact", "environment-universe", "put", "--id", "bad"}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, _ := c.run("artifact", "get", "--id", "bad"); code != 1 {
		t.Error("a refused universe was stored")
	}
}

// `artifact file get` refuses bytes that are not the ones the version
// records (one error line naming both digests, no file written), and
// `artifact gc` removes only an old unpublished upload.
func TestArtifactCorruptBytesAndGC(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	f := writeFile(t, filepath.Join(dir, "notes.txt"), "right\n")
	code, out, _ := c.run("artifact", "file", "put", f, "--id", "notes", "--json")
	var doc struct {
		S3URL  string `json:"s3_url"`
		SHA256 string `json:"sha256"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("put: exit %d\n%s", code, out)
	}
	objPath := strings.TrimPrefix(doc.S3URL, "file://")
	writeFile(t, objPath, "wrong\n")
	outDir := filepath.Join(dir, "out")
	code, _, stderr := c.run("artifact", "file", "get", "--id", "notes", "--output-dir", outDir)
	if code != 1 || !strings.Contains(stderr, "artifact notes:1") || !strings.Contains(stderr, doc.SHA256) ||
		strings.Count(stderr, "\n") != 1 {
		t.Fatalf("get of corrupt bytes: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(outDir, "notes.txt")); err == nil {
		t.Fatal("corrupt bytes were written out")
	}

	objects := filepath.Join(c.stateRoot, "agent-env", "object_store")
	orphan := filepath.Join(objects, "artifacts", "file", "notes", "put-20200101T000000Z-0123456789abcdef", "notes.txt")
	writeFile(t, orphan, "crashed put")
	code, out, _ = c.run("artifact", "gc", "--dry-run")
	if code != 0 || !strings.Contains(out, "Would remove artifacts/file/notes/put-20200101T000000Z-0123456789abcdef/notes.txt") {
		t.Fatalf("gc --dry-run: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("artifact", "gc")
	if code != 0 || !strings.Contains(out, "Removed 1 orphan object(s)") {
		t.Fatalf("gc: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(orphan); err == nil {
		t.Fatal("the orphan survived gc")
	}
	if _, err := os.Stat(objPath); err != nil {
		t.Fatalf("gc removed a published object: %v", err)
	}
}
