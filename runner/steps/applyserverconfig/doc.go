// Package applyserverconfig is the apply_server_config step: before an
// agent runs, configure the backing servers of a deployed env by calling
// the configuration extensions their cards advertise (a persona, a tool
// that should fail), through the gateway.
//
// Each directive names a server (service, or environment as the newer
// spelling; "*" is every server of the env), an extension URI as it
// appears on that server's card, and args, the extension's request body.
// The card is the child card the gateway composed at deploy time (stored
// in the deployed_envs entry, its endpoints already rewritten to the
// gateway's /svc/mcp-<server>/ proxy), or, when the entry has no stored
// card, the child's own card read live through that proxy. The first
// method the extension lists is called. An extension the card does not
// advertise is an error unless tolerate_unadvertised is set, in which
// case the directive is skipped and recorded in
// metadata.server_config_skipped[]. Each applied directive is recorded in
// metadata.server_config_changes[] as soon as it lands, so a partial apply
// never looks like a no-op.
//
//	{"id":"persona","type":"apply_server_config","env_id":"email",
//	 "directives":[{"service":"email","uri":"urn:agentenv:set-acting-user/v1",
//	                "args":{"user":"alice@example.com"}}]}
//
// Env authors declare such an extension with envsdk.AddSetting.
package applyserverconfig
