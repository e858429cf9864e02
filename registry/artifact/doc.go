// Package artifact stores artifacts: file, file_artifact_universe,
// environment, environment_universe, docker_image, skill (a SKILL.md
// folder), cli (an executable or script and its files) and vm_image (a
// disk image file, or the name of one a provider knows). Each artifact is
// a versioned document in the "artifacts" collection; its bytes live in
// the object store. A universe pins the exact versions of what it
// bundles, so it means the same thing forever; skills and cli artifacts
// are a universe of their files plus what describes them.
//
// Documents use the Python framework's field names. A member a type does
// not declare (a document of another build) is kept in Header.Extra and
// written back as it was.
//
// Writing an artifact is bytes first, document second. Each put writes its
// bytes once, write-once, under a key of its own upload, hashing them as
// they pass (a file given by path, such as a disk image, is streamed from
// it and never copied first):
//
//	<prefix/>artifacts/<type>/<id-segment>/put-<UTC start>-<16 hex>/<name>
//
// and then publishes them by putting the document at the version it
// expects next. The document store's (id, version) uniqueness is the
// compare-and-swap: on a conflict another writer published that version,
// so the put goes again at the next one with the same bytes, for as long
// as it takes (a conflict always means progress). Writers in other
// processes therefore never share a key, all succeed, and no document
// points at another writer's bytes. Writers in this process also queue on
// a per-id lock.
//
// Every read checks the bytes against the sha256 and size the document
// records (file artifacts, bundles, image tarballs and build contexts): a
// mismatch is a *CorruptError (registry.ErrCorrupt) naming the artifact,
// version and both digests, never silently wrong bytes. Documents written
// by older builds point at artifacts/<type>/<id-segment>/<version>/<name>;
// they read as before (verified when they carry a digest).
//
// A put that fails removes its own objects. A put that crashed leaves an
// upload nobody published; CollectOrphans removes such uploads once they
// are older than OrphanAge (a put never publishes an upload older than
// half of it, so collection cannot race a writer).
//
//	arts := artifact.New(docs, objects, nil)
//	f, err := arts.PutFile(ctx, "greeting-text", artifact.FileInput{Filename: "hello.txt", Body: r})
//	u, err := arts.PutUniverse(ctx, "greeting", map[string]registry.Ref{"hello.txt": f.Ref()}, nil)
//	err = arts.WriteUniverse(ctx, u.Ref(), "/tmp/out") // hello.txt appears under /tmp/out
package artifact
