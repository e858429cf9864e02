// Package blobobject is the ObjectStore on cloud object storage: Amazon S3
// and S3-compatible servers (MinIO, Ceph, R2...), Google Cloud Storage and
// Azure Blob Storage, all through one API, gocloud.dev/blob. It is what a
// configuration for many machines uses, so that artifact bytes live in no
// one machine's folder.
//
// The store maps the registry.ObjectStore contract onto a bucket:
//
//   - Put streams the reader to the bucket. Objects larger than one part
//     (Options.PartSize, 8 MiB by default) go up as a multipart upload with
//     at most Options.Concurrency parts in flight, so a put holds about
//     PartSize×Concurrency bytes whatever the object's size. The object
//     appears only when the upload completes; a reader that fails or a
//     cancelled context aborts it and nothing is visible.
//   - Write-once is a conditional write (If-None-Match: *), decided by the
//     server, so two machines racing for one key cannot both win. A put
//     first checks that the key is free, so a refused put fails before it
//     uploads anything.
//   - Open streams the object; nothing reads a whole object into memory.
//   - Keys live under an optional prefix of the bucket. Object URLs are
//     <scheme>://<bucket>/<prefix><key> (s3://, gs://, azblob://), and
//     KeyOf maps them back.
//   - List returns sizes and times from the bucket listing; its content
//     types are guessed from the keys (a listing does not carry them), while
//     Stat and Open give the stored ones.
//
// Open builds a store from a Config (backend, URL, credentials) and checks
// that the bucket answers before it returns, so an unreachable or missing
// bucket fails when the stores open, not at the first put deep in a run.
// Credentials are values the caller resolved from the secret store; they
// never appear in errors or logs.
//
//	st, err := blobobject.Open(ctx, &blobobject.Config{
//		Backend: "s3",
//		URL:     "s3://agentenv-artifacts/team-a/?region=eu-west-1",
//		AccessKeyID: id, SecretAccessKey: secret,
//	})
//	info, err := registry.PutFile(ctx, st, "artifacts/file/x/1/x.tar.gz", path, nil)
//	info.URL // s3://agentenv-artifacts/team-a/artifacts/file/x/1/x.tar.gz
package blobobject
