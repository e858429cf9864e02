package artifact_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/artifact"
)

// writeTree writes files (relative path → content) under a new folder.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const tidyMD = `---
name: tidy
description: >
  Keep lists tidy: sort them
  and drop duplicates.
license: MIT
allowed-tools: Bash(sort:*)
metadata:
  owner: qa
---
# Tidy

Sort the list.
`

func TestSkillPutGetWrite(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := writeTree(t, map[string]string{"SKILL.md": tidyMD, "scripts/sort.sh": "#!/bin/sh\nsort -u\n"})
	sk, err := e.arts.PutSkill(ctx, "tidy", dir)
	if err != nil {
		t.Fatal(err)
	}
	if sk.Version != 1 || sk.SkillName != "tidy" || sk.Description != "Keep lists tidy: sort them and drop duplicates.\n" ||
		sk.License != "MIT" || sk.AllowedTools != "Bash(sort:*)" || sk.SkillMetadata["owner"] != "qa" ||
		sk.AgentSkillsSpecVersion != artifact.AgentSkillsSpecVersion || *sk.SkillFilesRef != (registry.Ref{ID: "tidy-files", Version: 1}) ||
		!strings.HasPrefix(sk.SkillS3URL, "file://") {
		t.Fatalf("skill = %+v", sk)
	}
	out := t.TempDir()
	_, paths, err := e.arts.WriteSkill(ctx, registry.Ref{ID: "tidy"}, out)
	if err != nil || len(paths) != 2 {
		t.Fatalf("WriteSkill: %v %v", paths, err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "SKILL.md")); string(b) != tidyMD {
		t.Errorf("SKILL.md written back as %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "scripts", "sort.sh")); !strings.Contains(string(b), "sort -u") {
		t.Errorf("scripts/sort.sh written back as %q", b)
	}
	// @local ids: the SKILL.md name is the id's last segment.
	if _, err := e.arts.PutSkill(ctx, "@local/pkg/bundle/tidy", dir); err != nil {
		t.Errorf("@local skill: %v", err)
	}
}

// Every bad skill folder is refused with the file and front matter key
// named, and nothing is stored.
func TestSkillRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	cases := map[string]struct {
		files map[string]string
		want  string
	}{
		"no SKILL.md":      {map[string]string{"README.md": "x"}, "has no SKILL.md at its root"},
		"no front matter":  {map[string]string{"SKILL.md": "# tidy\n"}, "must begin with a YAML front matter block"},
		"unclosed":         {map[string]string{"SKILL.md": "---\nname: tidy\n"}, "is not closed"},
		"bad yaml":         {map[string]string{"SKILL.md": "---\nname: [tidy\n---\n"}, "is not valid YAML"},
		"no name":          {map[string]string{"SKILL.md": "---\ndescription: d\n---\n"}, `invalid SKILL.md name: is required`},
		"no description":   {map[string]string{"SKILL.md": "---\nname: tidy\n---\n"}, `invalid SKILL.md description: is required`},
		"name not a slug":  {map[string]string{"SKILL.md": "---\nname: Tidy--Up\ndescription: d\n---\n"}, `invalid SKILL.md name "Tidy--Up"`},
		"name is not id":   {map[string]string{"SKILL.md": "---\nname: other\ndescription: d\n---\n"}, `must equal the skill id's last segment "tidy"`},
		"metadata nested":  {map[string]string{"SKILL.md": "---\nname: tidy\ndescription: d\nmetadata:\n  a: [1]\n---\n"}, "must map strings to strings"},
		"description long": {map[string]string{"SKILL.md": "---\nname: tidy\ndescription: " + strings.Repeat("x", 1025) + "\n---\n"}, "at most 1024"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.arts.PutSkill(ctx, "tidy", writeTree(t, c.files))
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, registry.ErrInvalid) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := e.arts.Get(ctx, registry.Ref{ID: "tidy"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused skill stored something: %v", err)
	}
	if _, err := e.arts.Get(ctx, registry.Ref{ID: "tidy-files"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused skill stored its files: %v", err)
	}
}

func TestCLIFolderAndScript(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := writeTree(t, map[string]string{"bin/items": "#!/bin/sh\necho items\n", "lib/data.txt": "d"})
	c, err := e.arts.PutCLI(ctx, "items-cli", artifact.CLIInput{Path: dir, Entrypoint: "bin/items", EnvID: "items", EnvVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if c.CommandName != "items" || c.Entrypoint != "bin/items" || c.CLIFilesRef.ID != "items-cli-files" || c.EnvVersion != 2 {
		t.Fatalf("cli = %+v", c)
	}
	out := t.TempDir()
	_, paths, err := e.arts.WriteCLI(ctx, c.Ref(), out)
	if err != nil || len(paths) != 2 {
		t.Fatalf("WriteCLI: %v %v", paths, err)
	}
	if st, err := os.Stat(filepath.Join(out, "bin", "items")); err != nil || st.Mode()&0o111 == 0 {
		t.Errorf("entrypoint not written executable: %v %v", st, err)
	}
	// A single script file, not executable but starting with #!.
	script := filepath.Join(t.TempDir(), "hello.py")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env python3\nprint('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c2, err := e.arts.PutCLI(ctx, "hello", artifact.CLIInput{Path: script, CommandName: "hello"})
	if err != nil || c2.Entrypoint != "hello.py" || c2.CommandName != "hello" {
		t.Fatalf("script cli = %+v, %v", c2, err)
	}
}

func TestCLIRefusals(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dir := writeTree(t, map[string]string{"bin/items": "#!/bin/sh\n", "notes.txt": "plain text"})
	for _, c := range []struct {
		in   artifact.CLIInput
		want string
	}{
		{artifact.CLIInput{Path: dir}, "required with a folder"},
		{artifact.CLIInput{Path: dir, Entrypoint: "bin/missing"}, "not found"},
		{artifact.CLIInput{Path: dir, Entrypoint: "notes.txt"}, "neither executable"},
		{artifact.CLIInput{Path: dir, Entrypoint: "../x"}, "invalid filename"},
		{artifact.CLIInput{Path: dir, Entrypoint: "bin/items", CommandName: "a/b"}, "invalid command_name"},
		{artifact.CLIInput{Path: filepath.Join(dir, "bin", "items"), Entrypoint: "other"}, "with a single file"},
	} {
		if _, err := e.arts.PutCLI(ctx, "c", c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.in, err, c.want)
		}
	}
	if _, err := e.arts.Get(ctx, registry.Ref{ID: "c"}); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("a refused cli stored something: %v", err)
	}
}

// A disk image goes from its file to the object store in one pass, never
// copied first: the put works with no temp folder to write to.
func TestVMImageStreamsAndVerifies(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	img := filepath.Join(t.TempDir(), "ubuntu.qcow2")
	tmp := t.TempDir()
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	chunk := []byte(strings.Repeat("disk-image-bytes", 4096)) // 64 KiB
	for range 64 {                                            // 4 MiB
		f.Write(chunk)
		h.Write(chunk)
	}
	f.Close()
	oldTmp := os.Getenv("TMPDIR")
	t.Setenv("TMPDIR", filepath.Join(tmp, "missing")) // no temp file can be made
	v, err := e.arts.PutVMImage(ctx, "ubuntu", artifact.VMImageInput{Path: img, OS: "linux", DiskSizeGB: 20, CPU: 2, MemoryMB: 4096, Description: "base"})
	if err != nil {
		t.Fatal(err)
	}
	os.Setenv("TMPDIR", oldTmp)
	if v.DiskImageSize != 4<<20 || v.DiskImageSHA256 != hex.EncodeToString(h.Sum(nil)) || v.ImageName != "ubuntu.qcow2" ||
		v.Filename != "ubuntu.qcow2" || v.DiskImageObjectURL == "" || v.DiskImageS3URL != v.DiskImageObjectURL {
		t.Fatalf("vm image = %+v", v)
	}
	out := t.TempDir()
	p, _, err := e.arts.WriteVMImage(ctx, v.Ref(), out)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.Open(p)
	gh := sha256.New()
	io.Copy(gh, got)
	got.Close()
	if hex.EncodeToString(gh.Sum(nil)) != v.DiskImageSHA256 {
		t.Error("disk image written back differs")
	}
	// Name-only images, as the Python framework registers them.
	n, err := e.arts.PutVMImage(ctx, "macos", artifact.VMImageInput{ImageName: "tahoe-cua", OS: "macos"})
	if err != nil || n.DiskImageObjectURL != "" {
		t.Fatalf("name-only: %+v %v", n, err)
	}
	if _, _, err := e.arts.OpenVMImage(ctx, n.Ref()); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("name-only image opened: %v", err)
	}
	for _, in := range []artifact.VMImageInput{{}, {ImageName: "x", CPU: -1}, {Path: t.TempDir()}} {
		if _, err := e.arts.PutVMImage(ctx, "bad", in); err == nil {
			t.Errorf("%+v accepted", in)
		}
	}
}
