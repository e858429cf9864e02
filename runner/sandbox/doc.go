// Package sandbox defines what the runner needs from a sandbox provider: a
// place where files can be written and read and commands executed, created
// from a Spec and terminated at the end of a run.
//
// The interfaces are small on purpose. A Provider creates sandboxes and says
// what it can do through Capabilities, so that a task can be refused before
// anything is created. Extra abilities are optional interfaces found by type
// assertion: a Reconnector rebuilds a sandbox from its persisted Handle
// (resume and teardown after a crash).
//
// Files leave a sandbox through Sandbox.CopyOut, which treats the
// sandbox's symlinks as the untrusted input they are: each provider hands
// WalkTree a Tree (its view of the copied folder) and WalkTree follows a
// link only to a file or folder inside that folder, refusing any other by
// name with a *LinkError.
//
// Every provider must pass the shared suite in runner/sandboxtest:
//
//	func TestConformance(t *testing.T) {
//		sandboxtest.Run(t, func(t *testing.T) sandbox.Provider {
//			return local.New(t.TempDir(), nil)
//		})
//	}
//
// Phase 1 ships the local work-folder provider (runner/sandbox/local); the
// Docker-backed container mode is a later extension of the same interfaces.
package sandbox
