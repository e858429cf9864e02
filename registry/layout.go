package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

// Object key layout. Keys may carry a fixture prefix
// (AGENT_ENV_FIXTURE_PREFIX) in front; pass it explicitly.
const (
	RunPrefixPromptTrajectories = "prompt_agent_trajectories/" // + "prompt_id=<id>/"
	RunPrefixJudgeTrajectories  = "judge_trajectories/"
	RunPrefixEnvTrajectory      = "env_trajectory/"
	RunPrefixEnvTriggerState    = "env_trigger_state/"
	RunPrefixVerifierOutputs    = "verifier-outputs/"
	RunPrefixEnvSnapshots       = "env-snapshots/"
	RunPrefixAgentenvSnapshots  = "agentenv-snapshots/" // + "<uuid>/"
)

// IDSegment maps an entity id to its object-key segment: bare ids are used
// as they are; "@local/..." ids become "local/<slug>-<sha256[:12]>", so
// local objects never collide with bare ones and stay readable.
func IDSegment(id string) string {
	if !IsLocalID(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "local/" + slug(strings.TrimPrefix(id, LocalPrefix), 64) + "-" + hex.EncodeToString(sum[:])[:12]
}

// slug keeps [a-z0-9], turns every other run into one '-', and caps length.
func slug(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= max {
			break
		}
	}
	out := strings.TrimRight(b.String(), "-")
	if out == "" {
		out = "id"
	}
	return out
}

// ArtifactKey is "<prefix/>artifacts/<type>/<id-segment>/<version>/<name>",
// the layout older builds wrote artifact bytes under; documents still point
// at such objects and they still read. New bytes go under a per-put upload
// key (registry/artifact), because a key carrying the version is shared by
// every writer that races for that version. name may contain '/'.
func ArtifactKey(prefix, artifactType, id string, version int, name string) string {
	k := "artifacts/" + artifactType + "/" + IDSegment(id) + "/" + strconv.Itoa(version) + "/" + name
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		k = prefix + "/" + k
	}
	return k
}

// RepositoryName maps an artifact id to a valid OCI repository name
// (lowercase [a-z0-9] components joined by '.', '_', "__" or '-', '/' between
// path components). Ids that are already valid are returned unchanged
// ("items__env_image", "a2a-agent-a2a-default"); others are slugged and get a
// hash suffix so distinct ids keep distinct names.
func RepositoryName(id string) string {
	if validRepository(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	parts := strings.Split(strings.TrimPrefix(id, "@"), "/")
	for i, p := range parts {
		parts[i] = slug(p, 64)
	}
	return strings.Join(parts, "/") + "-" + hex.EncodeToString(sum[:])[:12]
}

// ValidRepository reports whether name is a valid OCI repository path.
func ValidRepository(name string) bool { return validRepository(name) }

var repoComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

func validRepository(name string) bool {
	if name == "" || len(name) > 255 {
		return false
	}
	for _, comp := range strings.Split(name, "/") {
		if !repoComponent.MatchString(comp) {
			return false
		}
	}
	return true
}
