package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/agentenv/agentenv/plugin/process"
	"github.com/agentenv/agentenv/runner/sandbox"
	"github.com/agentenv/agentenv/runner/sandbox/local"
)

// serve answers one request.
func (s *server) serve(ctx context.Context, r *jsonrpc2.Request) (any, error) {
	raw := json.RawMessage("{}")
	if r.Params != nil {
		raw = *r.Params
	}
	switch r.Method {
	case process.MethodDescribe:
		return process.Description{ProtocolVersion: process.ProtocolVersion, Name: "hostdir", Version: "0.1.0",
			SandboxProviders: []process.ProviderType{{Name: "hostdir", Capabilities: process.ProviderFeatures{VM: true}}}}, nil
	case process.MethodSandboxCreate:
		var p process.CreateParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		sp := p.Spec
		sb, err := s.prov.CreateSandbox(ctx, sandbox.Spec{Name: sp.Name, Mode: sp.Mode, Image: sp.Image, Port: sp.Port,
			Env: sp.Env, TTL: time.Duration(sp.TTLSeconds * float64(time.Second)), ExposedPorts: sp.ExposedPorts,
			Labels: sp.Labels, NetworkPolicy: sp.NetworkPolicy})
		if err != nil {
			return nil, err
		}
		ls := sb.(*local.Sandbox)
		s.mu.Lock()
		s.boxes[ls.ID()] = ls
		s.mu.Unlock()
		urls := map[string]string{}
		for port, u := range ls.TunnelURLs() {
			urls[strconv.Itoa(port)] = u
		}
		return process.CreateResult{ID: ls.ID(), TunnelURLs: urls}, nil
	case process.MethodSandboxTerminate:
		var p process.SandboxRef
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		sb, err := s.box(p.ID)
		if err != nil {
			return nil, nil // already gone
		}
		err = sb.Terminate(ctx)
		s.mu.Lock()
		delete(s.boxes, p.ID)
		s.mu.Unlock()
		return nil, err
	case process.MethodSandboxExec:
		var p process.ExecParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		sb, err := s.box(p.ID)
		if err != nil {
			return nil, err
		}
		o := &sandbox.ExecOptions{Env: p.Env, Dir: p.Dir}
		if p.Stdin != nil {
			o.Stdin = strings.NewReader(string(p.Stdin))
		}
		res, err := sb.Exec(ctx, p.Argv, o)
		if err != nil {
			return nil, err
		}
		return process.ExecResult{ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr}, nil
	case process.MethodSandboxWriteFile, process.MethodSandboxReadFile, process.MethodSandboxStat:
		var p process.FileParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		sb, err := s.box(p.ID)
		if err != nil {
			return nil, err
		}
		switch r.Method {
		case process.MethodSandboxWriteFile:
			return nil, sb.WriteFile(ctx, p.Path, strings.NewReader(string(p.Data)), fs.FileMode(p.Mode))
		case process.MethodSandboxReadFile:
			b, err := sb.ReadFile(ctx, p.Path)
			return process.FileResult{Data: b}, err
		}
		fi, err := sb.Stat(ctx, p.Path)
		if err != nil {
			return nil, err
		}
		return statResult(fi.Mode(), fi.Size()), nil
	case process.MethodTreeLstat, process.MethodTreeReadLink, process.MethodTreeReadDir,
		process.MethodTreeReadFile, process.MethodTreeInside:
		var p process.TreeParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		sb, err := s.box(p.ID)
		if err != nil {
			return nil, err
		}
		return tree(sb, r.Method, p)
	}
	return nil, &jsonrpc2.Error{Code: jsonrpc2.CodeMethodNotFound, Message: "no method " + r.Method}
}

func statResult(m fs.FileMode, size int64) process.StatResult {
	typ := "other"
	switch {
	case m.IsDir():
		typ = "dir"
	case m&fs.ModeSymlink != 0:
		typ = "symlink"
	case m.IsRegular():
		typ = "file"
	}
	return process.StatResult{Type: typ, Size: size, Mode: uint32(m.Perm())}
}

// tree serves the sandbox/tree_* methods over the copied folder opened as
// an os.Root, so that no name reaches outside it. Links are never
// followed here: agent-env resolves them.
func tree(sb *local.Sandbox, method string, p process.TreeParams) (any, error) {
	hp, err := sb.HostPath(p.Root)
	if err != nil {
		return nil, err
	}
	if method == process.MethodTreeInside {
		dirs := []string{hp}
		if real, err := filepath.EvalSymlinks(hp); err == nil && real != hp {
			dirs = append(dirs, real)
		}
		t := filepath.Clean(p.Target)
		for _, d := range dirs {
			if t == d {
				return process.TreeInsideResult{Name: ".", OK: true}, nil
			}
			if rest, ok := strings.CutPrefix(t, d+string(filepath.Separator)); ok {
				return process.TreeInsideResult{Name: filepath.ToSlash(rest), OK: true}, nil
			}
		}
		return process.TreeInsideResult{}, nil
	}
	rel, err := filepath.Rel(sb.Dir(), hp)
	if err != nil {
		return nil, err
	}
	wf, err := os.OpenRoot(sb.Dir())
	if err != nil {
		return nil, err
	}
	defer wf.Close()
	root, err := wf.OpenRoot(rel)
	if err != nil {
		if _, lerr := wf.Readlink(rel); lerr == nil {
			return nil, fmt.Errorf("copy out %s: the folder is a symlink: %w", p.Root, sandbox.ErrLinkOutside)
		}
		return nil, err
	}
	defer root.Close()
	switch method {
	case process.MethodTreeLstat:
		fi, err := root.Lstat(p.Name)
		if err != nil {
			return nil, err
		}
		return statResult(fi.Mode(), fi.Size()), nil
	case process.MethodTreeReadLink:
		t, err := root.Readlink(p.Name)
		return process.TreeReadLinkResult{Target: t}, err
	case process.MethodTreeReadDir:
		f, err := root.Open(p.Name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		names, err := f.Readdirnames(-1)
		slices.Sort(names)
		return process.TreeReadDirResult{Names: names}, err
	}
	f, err := root.OpenFile(p.Name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p.Name, sandbox.ErrNotRegular)
	}
	b, err := io.ReadAll(f)
	return process.FileResult{Data: b, Mode: uint32(fi.Mode().Perm())}, err
}
