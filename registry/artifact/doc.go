// Package artifact stores the artifact types of runner.md §11 that phase 1
// needs: file, file_artifact_universe, environment, environment_universe
// and docker_image. Each artifact is a versioned document in the
// "artifacts" collection; its bytes live in the object store under
// artifacts/<type>/<id-segment>/<version>/<name>. A universe pins the exact
// versions of what it bundles, so it means the same thing forever.
//
// Writing an artifact is bytes first, document second: the object keys
// carry the version, so the store picks version latest+1, writes the
// objects write-once, then puts the document expecting exactly that
// version. A concurrent writer in this process waits on a per-id lock; one
// in another process makes the put fail with a conflict and the store
// retries with the next version (3 attempts, as the reference). No
// document ever points at missing bytes.
//
//	arts := artifact.New(docs, objects, nil)
//	f, err := arts.PutFile(ctx, "greeting-text", artifact.FileInput{Filename: "hello.txt", Body: r})
//	u, err := arts.PutUniverse(ctx, "greeting", map[string]registry.Ref{"hello.txt": f.Ref()}, nil)
//	err = arts.WriteUniverse(ctx, u.Ref(), "/tmp/out") // hello.txt appears under /tmp/out
package artifact
