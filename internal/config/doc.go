// Package config loads .agentenv/config.toml.
//
// Discovery: AGENT_ENV_CONFIG names the file (it must exist, else every
// command fails); otherwise the nearest .agentenv/config.toml walking up
// from the working directory; otherwise none, and built-in defaults apply.
// Exactly one file is read, whole: there is no merging of several files.
//
// Precedence, per key: built-in default < file < AGENT_ENV_* (and
// LITELLM_*) environment variables < programmatic overrides
// (Options.Override, i.e. CLI flags). Every key remembers where its value
// came from; Show prints the effective configuration with those sources and
// with secrets masked.
//
// The file is decoded with go-toml/v2 in strict mode to find unknown tables
// and keys. Unknown ones are warnings with a suggestion ("unknown table
// [sandbx]: did you mean [sandbox]?"), not errors, so a config written for a
// newer version still loads. Type errors, TOML syntax errors, an unreadable
// file, and the few keys the reference makes strict ([agents], reserved
// [model.params]) are errors naming the file, line and key; so are values
// no built-in serves: an unknown store or runner impl, and an unknown
// sandbox provider wherever the file names one (so a typo fails at load,
// not at the first deploy). The Python reference's module path of its
// local runner names ours. .agentenv/config.example.toml in the
// repository documents every key; a test loads it warning-free.
//
// Strings may be references ("env:NAME", "secret:KEY", with "?default");
// they are kept as written and resolved at first use (see
// registry.Resolve and registry/stores), so Show prints references, never
// their values.
//
//	cfg, err := config.Load(&config.Options{Override: func(c *config.Config) { c.Model.Default = flagModel }})
//	for _, w := range cfg.Warnings { log.Warn(w.String()) }
//	cfg.Show(os.Stdout)
package config
