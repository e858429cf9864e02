// Package hygiene holds repository-wide checks that run as ordinary tests,
// so `go test ./...` in CI enforces them with no extra tooling.
//
// The package has no non-test code. Its tests walk the module from its root
// and fail when:
//
//   - a _test.go file calls time.Sleep outside a testing/synctest bubble
//     (a test that waits on wall time is flaky on a loaded CI machine; wait on
//     a channel, poll a condition with a deadline, or use synctest instead);
//   - a package directory has neither a doc.go nor a package comment (the
//     package comment is where a package says why it exists);
//   - a struct embeds http.ResponseWriter without an Unwrap method (SSE
//     flushing through http.NewResponseController needs it);
//   - a package directory is named like a grab bag (util, common, helpers);
//   - a non-test file in protocol/ imports anything but the standard library
//     (protocol is the wire contract every other package depends on);
//   - a doc, comment, conformance case or script points outside the
//     repository: a section sign that is not an RFC citation (a section
//     of the project's private spec), a machine path, or a Markdown file that does not
//     exist (users have only the repository; the wire contract they need
//     is docs/protocol.md);
//   - a non-test file in envsdk/ or agentsdk/ imports a package of this
//     module other than protocol/ or its own subtree (the SDKs are published
//     to environment and agent authors and must not drag in the gateway,
//     runner or registry).
//
// Known exceptions live in allow-lists in the test files, each with a reason
// (and, where the exception is a debt, a TODO naming the owning area). An
// entry that no longer matches anything is reported with t.Log so the list
// can shrink as the debts are paid.
package hygiene
