package envdeploy

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentenv/agentenv/internal/procid"
	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/runner/sandbox"
)

// Labels every backend resource carries (Docker labels; the process
// backend writes them into its group state).
const (
	LabelInstance = "agentenv.instance" // the env or agent instance id
	LabelSandbox  = "agentenv.sandbox"  // the group (sandbox) id
	LabelOwner    = "agentenv.owner"    // "pid:<n>": the process that created it
	// LabelOwnerStart and LabelOwnerHost make the owner survive pid reuse:
	// "<boot id>/<start ticks>" and the host (internal/procid).
	LabelOwnerStart = "agentenv.owner.start"
	LabelOwnerHost  = "agentenv.owner.host"
	LabelPersist    = "agentenv.persist" // "true": outlives its owner while its instance record exists
	LabelExpires    = "agentenv.expires" // unix seconds; past it the resource may be pruned
	LabelRole       = "agentenv.role"    // mcp_server, gateway, agent
	// LabelAttrPrefix prefixes the labels a sandbox was created with
	// (sandbox.Spec.Labels), copied onto its resources so a sweep finds them.
	LabelAttrPrefix = "agentenv.attr."
	// LabelStore is the id of the store (registry.StoreID) whose command
	// created the resource: prune touches only its own store's resources.
	LabelStore = registry.StoreLabel
)

// CleanupTimeout bounds the removal of what a cancelled or failed deploy
// created. The removal runs on a fresh context (the deploy's own may be
// cancelled: Ctrl-C) so that it completes, but never hangs the exit.
const CleanupTimeout = 60 * time.Second

// CleanupContext is the context of such a removal: ctx's values without
// its cancellation, bounded by CleanupTimeout.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}

// Ports inside a group.
const (
	MCPPort = 18765
	A2APort = 8000
)

// Sentinel errors.
var (
	// ErrNotFound: the group, instance or entity does not exist.
	ErrNotFound = errors.New("not found")
	// ErrEngineUnavailable: the backend's engine (Docker) does not answer.
	ErrEngineUnavailable = errors.New("container engine unavailable")
	// ErrImageMissing: an image is neither in the engine nor in the store.
	ErrImageMissing = errors.New("image missing")
)

// Source is what a workload runs. A backend uses the part it understands:
// Docker the image (Ref, loading Tarball when the engine lacks it), the
// process backend the static Binary.
type Source struct {
	// Ref is the image reference, e.g. localhost:5000/echo__env_image:v1.
	Ref string
	// ImageID, when known, is the image's config digest: an engine image
	// under Ref with another id is stale and the tarball is loaded again.
	ImageID string
	// StoreID is the id of the store that registered the image
	// (registry.StoreID); the images it built carry the label
	// registry.StoreLabel=<StoreID>. A backend removes an image only when
	// it carries this label with this value: never another store's.
	StoreID string
	// Tarball opens the gzipped docker-save tarball; nil = none.
	Tarball func(ctx context.Context) (io.ReadCloser, error)
	// Binary opens the static Linux binary; nil = none.
	Binary func(ctx context.Context) (io.ReadCloser, error)
	// What names the source in errors ("env echo v1 (echo__env_image)").
	What string
	// PutHint is the command that registers it, for "image missing" errors.
	PutHint string
}

// Workload is one container or process of a group.
type Workload struct {
	// Name is unique in the group: the container name suffix and its
	// network alias.
	Name    string
	Aliases []string // more network aliases
	Role    string   // mcp_server, gateway, agent (label)
	Source  Source
	Env     map[string]string
	// Port is the port it listens on and PortEnv the variable that tells it
	// (MCP_PORT, A2A_PORT). The Docker backend uses Port as is; the process
	// backend picks a free loopback port and sets PortEnv to it.
	Port    int
	PortEnv string
	// Publish makes it reachable from the host on 127.0.0.1.
	Publish bool
	// Join lists other groups whose members it must reach by name (an
	// agent joins the networks of its envs).
	Join []string
}

// Endpoint is where a started workload is reached.
type Endpoint struct {
	// Internal is the base URL other members of the group (and workloads
	// that Join it) use: http://<name>:<port> or http://127.0.0.1:<port>.
	Internal string
	// Host is the base URL from the host; "" unless published.
	Host string
	// ID is the container id or process id.
	ID string
}

// GroupSpec creates a group.
type GroupSpec struct {
	ID     string // "" = backend-generated
	Labels map[string]string
}

// Group is one network of workloads (a sandbox in the reference's terms).
type Group interface {
	ID() string
	// Run starts w and returns where it is reached; it does not wait for
	// readiness.
	Run(ctx context.Context, w Workload) (Endpoint, error)
	// Logs returns the tail of a workload's output (for error messages).
	Logs(ctx context.Context, name string, lines int) string
	// Terminate removes every workload and the group; idempotent.
	Terminate(ctx context.Context) error
}

// ExitWatcher is implemented by groups that can tell a workload has died
// (a crash, a port already taken): readiness then fails at once with its
// log instead of waiting for the timeout.
type ExitWatcher interface {
	// Exited names a workload of the group that is no longer running.
	Exited(ctx context.Context) (name string, exited bool)
}

// AddressPlanner is implemented by groups that know a workload's
// Endpoint.Internal before it runs (Docker: its network alias). The
// gateway topology then starts the gateway together with its servers
// instead of after them: the gateway's config holds only those addresses,
// and the gateway waits for its children itself. Without it (the process
// backend picks a port at Run) the gateway starts once every server runs.
type AddressPlanner interface {
	// InternalURL is what Run(w) will return as Endpoint.Internal.
	InternalURL(w Workload) string
}

// Backend runs groups.
type Backend interface {
	// Type is the sandbox name ("docker", "process").
	Type() string
	// Check reports whether the backend can run (an engine answers); the
	// error explains what is missing.
	Check(ctx context.Context) error
	CreateGroup(ctx context.Context, s GroupSpec) (Group, error)
	// OpenGroup reconnects to a group by id; ErrNotFound when gone.
	OpenGroup(ctx context.Context, id string) (Group, error)
	// ReachableURL rewrites a host URL (a model endpoint on this machine)
	// into one a workload can use (loopback → host.docker.internal).
	ReachableURL(u string) string
	// Prune removes every labelled resource that Orphaned reports as such,
	// and returns what it removed.
	Prune(ctx context.Context, orphaned func(labels map[string]string) bool) ([]string, error)
	Close() error
}

// ImageBuilder is implemented by backends that can build and save images
// (Docker): the --dockerfile path of put.
type ImageBuilder interface {
	// BuildImage builds the context tar with the Dockerfile at dockerfile
	// (a path inside the context), tags it ref and labels it with labels.
	// A failed build returns an error carrying the build log's tail.
	BuildImage(ctx context.Context, contextTar io.Reader, dockerfile, ref string, labels map[string]string) error
	// SaveImage streams the docker-save tarball of ref.
	SaveImage(ctx context.Context, ref string) (io.ReadCloser, error)
	// HasImage reports whether the engine holds ref.
	HasImage(ctx context.Context, ref string) (bool, error)
	// LoadImage loads a docker-save tarball (plain or gzipped).
	LoadImage(ctx context.Context, r io.Reader) error
}

// OwnerLabels are the labels of resources created by this process for
// instance id.
func OwnerLabels(instanceID string, persist bool, expires time.Time) map[string]string {
	self := procid.Self()
	l := map[string]string{
		LabelInstance: instanceID,
		LabelOwner:    "pid:" + strconv.Itoa(self.PID),
		LabelPersist:  strconv.FormatBool(persist),
	}
	if self.Start != "" && self.Boot != "" {
		l[LabelOwnerStart] = self.Boot + "/" + self.Start
		l[LabelOwnerHost] = self.Host
	}
	if !expires.IsZero() {
		l[LabelExpires] = strconv.FormatInt(expires.Unix(), 10)
	}
	return l
}

// PruneRule decides which labelled resources Prune removes.
type PruneRule struct {
	Now time.Time
	// Live reports whether an instance record says the instance is
	// deployed; nil means none is.
	Live func(instanceID string) bool
	// StoreID, unless AllStores, limits pruning to resources labelled with
	// this store; "" with AllStores false keeps everything labelled.
	StoreID   string
	AllStores bool
}

// Decide tells whether a resource with labels l is an orphan to remove,
// and why (the reason is printed for what is kept). A resource of another
// store (or of none) is kept unless AllStores. Then it is an orphan when
// it is expired, or when its owner process is gone and either it does not
// persist or its instance is not live.
func (r PruneRule) Decide(l map[string]string) (orphan bool, reason string) {
	inst, ok := l[LabelInstance]
	if !ok {
		return false, "not an agentenv resource"
	}
	if !r.AllStores && l[LabelStore] != r.StoreID {
		if l[LabelStore] == "" {
			return false, "carries no store id (made before store ids, or by hand); --all-stores prunes it"
		}
		return false, "belongs to another store (" + l[LabelStore] + "); --all-stores prunes it"
	}
	if exp, err := strconv.ParseInt(l[LabelExpires], 10, 64); err == nil && r.Now.Unix() > exp {
		return true, "expired"
	}
	if !ownerGone(l) {
		if h := l[LabelOwnerHost]; h != "" && h != procid.Host() {
			return false, "its owner runs on another host (" + h + "); prune there"
		}
		return false, "its owner process (" + l[LabelOwner] + ") is running"
	}
	if l[LabelPersist] != "true" {
		return true, "owner gone"
	}
	if r.Live != nil && r.Live(inst) {
		return false, "instance " + inst + " is recorded as deployed (tear it down with its teardown command)"
	}
	return true, "owner gone, instance not deployed"
}

// Orphaned is the prune rule over every store's resources (no store
// scoping), as a predicate.
func Orphaned(now time.Time, live func(instanceID string) bool) func(map[string]string) bool {
	r := PruneRule{Now: now, Live: live, AllStores: true}
	return func(l map[string]string) bool {
		orphan, _ := r.Decide(l)
		return orphan
	}
}

// ownerGone reads the owner labels. With the start and host labels it asks
// procid (pid reuse and other hosts are told apart: an owner of another
// host is never gone); without them (older resources) a missing pid is
// gone.
func ownerGone(l map[string]string) bool {
	boot, start, ok := strings.Cut(l[LabelOwnerStart], "/")
	if !ok || l[LabelOwnerHost] == "" {
		return !OwnerAlive(l[LabelOwner])
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(l[LabelOwner], "pid:"))
	if err != nil {
		return true
	}
	return procid.Owner{PID: pid, Start: start, Boot: boot, Host: l[LabelOwnerHost]}.Gone()
}

// OwnerAlive reports whether an owner label ("pid:<n>") names a running
// process of this machine.
func OwnerAlive(owner string) bool {
	if len(owner) < 5 || owner[:4] != "pid:" {
		return false
	}
	pid, err := strconv.Atoi(owner[4:])
	if err != nil || pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// SweepLabelled terminates, through b's Prune, every group whose creation
// labels (LabelAttrPrefix + key) include labels, and returns their instance
// ids. It is sandbox.Sweeper for the backends that are sandbox providers too.
func SweepLabelled(ctx context.Context, b Backend, labels map[string]string) ([]string, error) {
	if len(labels) == 0 {
		return nil, sandbox.ErrNoSweepLabels
	}
	want := make(map[string]string, len(labels))
	for k, v := range labels {
		want[LabelAttrPrefix+k] = v
	}
	seen := map[string]bool{}
	var ids []string
	_, err := b.Prune(ctx, func(l map[string]string) bool {
		if !sandbox.HasLabels(l, want) {
			return false
		}
		if id := l[LabelInstance]; !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
		return true
	})
	return ids, err
}
