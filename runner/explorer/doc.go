// Package explorer is the web UI behind `agent-env up`: server-rendered
// pages over the registry's stores (task instances and their steps,
// verifier scores, agent and gateway trajectories, evals, registry
// documents and their versions) and the JSON API the pages are built from,
// under /api/v1/.
//
// It lives under runner/ because it reads the runner's records (task
// instances, the step journal, verifications) through the runner's own
// types; only cmd/ imports it. The server is echo/v4: request log (slog),
// recover, gzip and CSRF middleware, with templates and static files
// embedded, so the binary serves the UI with no build step.
//
//	h, err := explorer.New(&explorer.Stores{Documents: docs, Objects: objs}, &explorer.Options{Token: tok})
//	srv := &http.Server{Handler: h}
//
// Every panel of a page reads its own data: a missing or broken object
// (a deleted trajectory) shows a message in that panel and the rest of the
// page renders. Lists are paged by keyset cursors (registry.PageRecords),
// so the runs list costs the same at one instance and at 100,000.
package explorer
