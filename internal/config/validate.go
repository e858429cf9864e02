package config

import (
	"fmt"
	"sort"
	"strings"
)

// StoreImpls lists the built-in implementations per store kind (aliases
// included). Plugins may add more later.
var storeImpls = map[string][]string{
	"document": {"local", "sqlite", "postgres"},
	"object":   {"local", "filesystem", "s3", "gcs", "azure"},
	"image":    {"local"},
	"secret":   {"local", "env"},
}

// storeConfigKeys are the [stores.<kind>.config] keys each implementation
// reads; others are warned about.
var storeConfigKeys = map[string]map[string][]string{
	"document": {"local": {"path", "local_path"}, "sqlite": {"path", "local_path"}, "postgres": {"dsn", "schema", "local_path"}},
	"object": {"local": {"root"}, "filesystem": {"root"},
		"s3":    {"url", "access_key_id", "secret_access_key", "session_token", "part_size_mib", "concurrency"},
		"gcs":   {"url", "credentials_json", "part_size_mib", "concurrency"},
		"azure": {"url", "account_key", "part_size_mib", "concurrency"}},
	"image":  {"local": {"registry_host", "repository_prefix"}},
	"secret": {"local": {"file_path", "use_env"}, "env": {"file_path", "use_env"}},
}

// checkStoreConfigKeys warns about config keys the selected
// implementation does not read.
func (c *Config) checkStoreConfigKeys() {
	for _, kind := range []string{"document", "object", "image", "secret"} {
		spec := map[string]StoreSpec{"document": c.Stores.Document, "object": c.Stores.Object,
			"image": c.Stores.Image, "secret": c.Stores.Secret}[kind]
		known, ok := storeConfigKeys[kind][spec.Impl]
		if !ok {
			continue // unknown impl: Validate reports it
		}
		var keys []string
		for k := range spec.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if contains(known, k) {
				continue
			}
			w := Warning{File: c.File, Key: "stores." + kind + ".config." + k,
				Message: fmt.Sprintf("unknown key %q in [stores.%s.config] (the %s %s store reads %s)", k, kind, spec.Impl, kind, strings.Join(known, ", "))}
			w.Suggestion = suggest(k, known)
			c.Warnings = append(c.Warnings, w)
		}
	}
}

// runnerImpls are the accepted [runner] impl names: ours, and the module
// paths users of the Python reference framework write for its local
// runner, which is what ours reimplements.
var runnerImpls = []string{DefaultRunnerImpl, TemporalRunnerImpl,
	"agent_env.runner.local_runner:LocalRunner", "agent_env.runner.local_runner.LocalRunner",
	"agent_env.runner:LocalRunner", "agent_env.runner.LocalRunner"}

// sandboxProviders are the built-in sandbox provider names the CLI wires
// (cmd/agent-env checks it against its backends): "local" and "docker"
// (the local Docker engine for envs and agents; "local" is also the task
// steps' work folders) and "process" (local processes; the work folders
// for task steps) and "kubernetes" (Pods of the cluster configured in
// [sandbox.providers.kubernetes.config]). Plugins add more
// (Options.SandboxProviders).
var sandboxProviders = []string{"local", "docker", "process", "kubernetes"}

// SandboxProviders returns the built-in sandbox provider names.
func SandboxProviders() []string { return append([]string(nil), sandboxProviders...) }

// checkSandboxProviders refuses a provider name the CLI cannot serve,
// wherever the config names one, so a typo fails at load rather than at
// the first deploy.
func (c *Config) checkSandboxProviders() error {
	known := append(append([]string(nil), sandboxProviders...), c.pluginSandboxes...)
	bad := func(key, name, what string) error {
		msg := fmt.Sprintf("unknown sandbox provider %q%s (known: %s)", name, what, strings.Join(known, ", "))
		if s := suggest(name, known); s != "" {
			msg += "; did you mean " + s + "?"
		}
		src := c.Source(key)
		if strings.HasPrefix(key, "sandbox.providers.") {
			src = fileSourceName // a table only the file can name
		}
		return &Error{File: c.File, Key: key, Msg: msg + " [" + src + "]"}
	}
	for _, key := range []string{"sandbox.default", "sandbox.agent_default"} {
		v := c.Sandbox.Default
		if key == "sandbox.agent_default" {
			v = c.Sandbox.AgentDefault
		}
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				return &Error{File: c.File, Key: key, Msg: fmt.Sprintf("empty provider name in %q", v)}
			}
			if !contains(known, part) {
				in := ""
				if part != strings.TrimSpace(v) {
					in = fmt.Sprintf(" in %q", v)
				}
				return bad(key, part, in)
			}
		}
	}
	var names []string
	for name := range c.Sandbox.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !contains(known, name) {
			return bad("sandbox.providers."+name, name, "")
		}
	}
	return nil
}

// StoreImpls returns the accepted implementation names of a store kind.
func StoreImpls(kind string) []string { return append([]string(nil), storeImpls[kind]...) }

// Validate checks values that are wrong whatever the context.
func (c *Config) Validate() error {
	for kind, spec := range map[string]StoreSpec{"document": c.Stores.Document, "object": c.Stores.Object,
		"image": c.Stores.Image, "secret": c.Stores.Secret} {
		known := append(append([]string(nil), storeImpls[kind]...), c.pluginStores[kind]...)
		if !contains(known, spec.Impl) {
			msg := fmt.Sprintf("unknown %s store %q (known: %s)", kind, spec.Impl, strings.Join(known, ", "))
			if s := suggest(spec.Impl, known); s != "" {
				msg += "; did you mean " + s + "?"
			}
			return &Error{File: c.File, Key: "stores." + kind + ".impl", Msg: msg + " [" + c.Source("stores."+kind+".impl") + "]"}
		}
	}
	if c.Stores.Document.Impl == "postgres" && c.Stores.Document.StoreConfigString("dsn") == "" {
		return &Error{File: c.File, Key: "stores.document.config.dsn", Msg: "the postgres document store needs a dsn (a reference such as env:AGENT_ENV_POSTGRES_DSN is fine)"}
	}
	if err := c.validateBlobObjects(); err != nil {
		return err
	}
	if sf := c.Stores.Secret.StoreConfigString("file_path"); strings.HasPrefix(sf, "secret:") {
		return &Error{File: c.File, Key: "stores.secret.config.file_path", Msg: "[stores.secret] cannot use secret: references"}
	}
	if !contains(runnerImpls, c.Runner.Impl) {
		return &Error{File: c.File, Key: "runner.impl", Msg: fmt.Sprintf("unknown runner %q (known: %s) [%s]",
			c.Runner.Impl, strings.Join(runnerImpls, ", "), c.Source("runner.impl"))}
	}
	if c.Runner.Temporal.MaxConcurrentSteps < 0 {
		return &Error{File: c.File, Key: "runner.temporal.max_concurrent_steps", Msg: fmt.Sprintf("must be >= 0, got %d", c.Runner.Temporal.MaxConcurrentSteps)}
	}
	if c.Runner.Temporal.HeartbeatTimeoutSeconds < 0 {
		return &Error{File: c.File, Key: "runner.temporal.heartbeat_timeout_seconds", Msg: fmt.Sprintf("must be >= 0, got %d", c.Runner.Temporal.HeartbeatTimeoutSeconds)}
	}
	for name, n := range c.Runner.Temporal.ProviderLimits {
		if n < 0 {
			return &Error{File: c.File, Key: "runner.temporal.provider_limits." + name, Msg: fmt.Sprintf("must be >= 0, got %d", n)}
		}
	}
	if c.Runner.Config.Workers < 1 {
		return &Error{File: c.File, Key: "runner.config.workers", Msg: fmt.Sprintf("must be >= 1, got %d", c.Runner.Config.Workers)}
	}
	if err := c.checkSandboxProviders(); err != nil {
		return err
	}
	if c.Agents.DefaultA2AAgentID == "" {
		return &Error{File: c.File, Key: "agents.default_a2a_agent_id", Msg: "must not be empty"}
	}
	var aliases []string
	for k := range c.Artifacts.TypeAliases {
		aliases = append(aliases, k)
	}
	sort.Strings(aliases)
	for _, k := range aliases {
		if c.Artifacts.TypeAliases[k] == "" {
			return &Error{File: c.File, Key: "artifacts.type_aliases." + k, Msg: "empty target type"}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// blobCredentialKeys are the object store config keys that hold
// credentials: they must be env:/secret: references, so a config file
// never holds a key itself.
var blobCredentialKeys = []string{"access_key_id", "secret_access_key", "session_token", "credentials_json", "account_key"}

// validateBlobObjects checks [stores.object] for the cloud backends
// (s3, gcs, azure): a url, credentials only as references, positive sizes.
// The URL's own form is checked when the store opens.
func (c *Config) validateBlobObjects() error {
	spec := c.Stores.Object
	switch spec.Impl {
	case "s3", "gcs", "azure":
	default:
		return nil
	}
	key := func(k string) string { return "stores.object.config." + k }
	if spec.StoreConfigString("url") == "" {
		return &Error{File: c.File, Key: key("url"), Msg: fmt.Sprintf("the %s object store needs a url (e.g. %s)", spec.Impl,
			map[string]string{"s3": "s3://BUCKET/PREFIX?region=eu-west-1", "gcs": "gs://BUCKET/PREFIX", "azure": "azblob://CONTAINER/PREFIX?account=NAME"}[spec.Impl])}
	}
	for _, k := range blobCredentialKeys {
		v, ok := spec.Config[k]
		if !ok {
			continue
		}
		sv, isString := v.(string)
		if !isString || !(strings.HasPrefix(sv, "secret:") || strings.HasPrefix(sv, "env:")) {
			// Never echo the value: it may be the credential itself.
			return &Error{File: c.File, Key: key(k), Msg: "must be a reference (secret:NAME or env:NAME), never the credential itself"}
		}
	}
	for _, k := range []string{"part_size_mib", "concurrency"} {
		v, ok := spec.Config[k]
		if !ok {
			continue
		}
		n, isInt := v.(int64)
		if !isInt || n < 0 || (k == "part_size_mib" && n > 0 && n < 5) || n > 5120 {
			return &Error{File: c.File, Key: key(k), Msg: fmt.Sprintf("want a whole number (part_size_mib: 5 to 5120; concurrency: 1 or more), got %v", v)}
		}
	}
	return nil
}
