package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestArtifactFileUniverse(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"a.txt": "A\n", "b.txt": "B\n"} {
		f := writeFile(t, filepath.Join(dir, "in", name), body)
		if code, out, stderr := c.run("artifact", "file", "put", f, "--id", "m-"+name); code != 0 {
			t.Fatalf("%s %s", out, stderr)
		}
	}
	code, out, stderr := c.run("artifact", "file-artifact-universe", "put", "--id", "pair", "--file-artifact", "m-a.txt", "--file-artifact", "m-b.txt:1")
	if code != 0 || out != "Created FileArtifactUniverse: id=pair version=1 file_count=2\n" {
		t.Fatalf("put: exit %d %q %q", code, out, stderr)
	}
	code, _, stderr = c.run("artifact", "file-artifact-universe", "put", "--id", "bad", "--file-artifact", "m-a.txt", "--file-artifact", "m-a.txt")
	if code != 1 || stderr != "Error: --file-artifact m-a.txt: file name a.txt is already given by m-a.txt:1\n" {
		t.Errorf("duplicate member: exit %d %q", code, stderr)
	}
	writeFile(t, filepath.Join(dir, "tree", "sub", "c.txt"), "C\n")
	writeFile(t, filepath.Join(dir, "tree", "d.txt"), "D\n")
	code, out, _ = c.run("artifact", "file-artifact-universe", "put-bundled", "--id", "tree", "--file-dir", filepath.Join(dir, "tree"), "--json")
	var u struct {
		Version         int               `json:"version"`
		FileArtifactIDs map[string]string `json:"file_artifact_ids"`
		BundleS3URL     string            `json:"bundle_s3_url"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &u) != nil || u.Version != 1 || u.FileArtifactIDs["sub/c.txt"] != "tree/sub/c.txt" || u.BundleS3URL == "" {
		t.Fatalf("put-bundled: exit %d\n%s", code, out)
	}
	code, out, _ = c.run("artifact", "file-artifact-universe", "get", "--id", "pair")
	if code != 0 || !strings.Contains(out, `"a.txt": "m-a.txt"`) {
		t.Errorf("get: exit %d\n%s", code, out)
	}
	one := filepath.Join(dir, "one")
	code, out, _ = c.run("artifact", "file-artifact-universe", "get", "--id", "tree", "--output-dir", one)
	if code != 0 || out != "Wrote 2 files of tree:1 to "+one+"\n" || string(mustRead(t, filepath.Join(one, "sub", "c.txt"))) != "C\n" {
		t.Errorf("get --output-dir: exit %d %q", code, out)
	}
	many := filepath.Join(dir, "many")
	code, _, _ = c.run("artifact", "file-artifact-universe", "get-many", "--id", "tree", "--id", "pair:1", "--output-dir", many)
	if code != 0 || string(mustRead(t, filepath.Join(many, "pair", "b.txt"))) != "B\n" || string(mustRead(t, filepath.Join(many, "tree", "d.txt"))) != "D\n" {
		t.Errorf("get-many: exit %d", code)
	}
	code, out, _ = c.run("artifact", "file-artifact-universe", "list")
	if code != 0 || !regexp.MustCompile(`pair\s+1\s+2`).MatchString(out) || !regexp.MustCompile(`tree\s+1\s+2`).MatchString(out) {
		t.Errorf("list: exit %d\n%s", code, out)
	}
	code, _, stderr = c.run("artifact", "file-artifact-universe", "get", "--id", "m-a.txt")
	if code != 1 || !strings.Contains(stderr, `is a "file", not a "file_artifact_universe"`) {
		t.Errorf("get of a file: exit %d %q", code, stderr)
	}
}

func TestArtifactEnvironmentUniverseGet(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	items := writeFile(t, filepath.Join(dir, "items.json"), `{"items":[1]}`)
	if code, out, stderr := c.run("artifact", "environment", "put", items, "--id", "items-data", "--environment-name", "items"); code != 0 {
		t.Fatalf("%s %s", out, stderr)
	}
	if code, out, stderr := c.run("artifact", "environment-universe", "put", "--id", "shop", "--environment-artifact", "items-data"); code != 0 {
		t.Fatalf("%s %s", out, stderr)
	}
	code, out, _ := c.run("artifact", "environment-universe", "get", "--id", "shop")
	if code != 0 || !strings.Contains(out, `"environment_artifact_refs"`) {
		t.Errorf("get: exit %d\n%s", code, out)
	}
	outDir := filepath.Join(dir, "out")
	code, out, _ = c.run("artifact", "environment-universe", "get", "--id", "shop:1", "--output-dir", outDir)
	p := filepath.Join(outDir, "items", "items.json")
	if code != 0 || out != "Wrote "+p+"\n" || string(mustRead(t, p)) != `{"items":[1]}` {
		t.Errorf("get --output-dir: exit %d %q", code, out)
	}
}
