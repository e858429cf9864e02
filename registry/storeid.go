package registry

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// StoreIDFile is the file in the state root that holds the store id.
const StoreIDFile = "store-id"

// StoreLabel is the container-engine label that names the store an image
// (or any other engine resource) belongs to: StoreLabel=<store id>. A
// store removes only what carries its own id.
const StoreLabel = "agentenv.store"

var storeIDRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// StoreID returns the id of the store kept under stateRoot: 16 lowercase
// hex characters (64 random bits), generated on first use and kept in
// <stateRoot>/store-id for good.
//
// Why: every store numbers its own artifact versions, so two stores on one
// machine both have an "echo__env_image" version 1. Whatever two stores
// share (a Docker engine's image tags, container labels) must carry the
// store id to tell them apart.
//
// Creation is atomic across processes: the id is written to a temporary
// file and hard-linked into place, so of several first users exactly one
// id wins and every caller returns it. A malformed file is an
// *InvalidError naming it (it is never replaced: resources labelled with
// the old id would be orphaned).
func StoreID(stateRoot string) (string, error) {
	if stateRoot == "" {
		return "", &InvalidError{Field: "state root", Reason: "empty"}
	}
	p := filepath.Join(stateRoot, StoreIDFile)
	if id, err := readStoreID(p); !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := EnsureStateDir(stateRoot, stateRoot); err != nil {
		return "", err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store id: %w", err)
	}
	tmp, err := os.CreateTemp(stateRoot, ".store-id-*")
	if err != nil {
		return "", fmt.Errorf("store id %s: %w", p, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("store id %s: %w", p, err)
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("store id %s: %w", p, err)
	}
	return readStoreID(p) // ours, or the one that won the race
}

func readStoreID(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("store id %s: %w", p, err)
	}
	id := strings.TrimSpace(string(b))
	if !storeIDRE.MatchString(id) {
		return "", &InvalidError{Field: "store id file", Value: p, Reason: "does not hold 16 lowercase hex characters"}
	}
	return id, nil
}
