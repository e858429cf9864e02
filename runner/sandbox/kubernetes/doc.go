// Package kubernetes is the sandbox provider registered as "kubernetes": it
// runs env instances, agents and deploy_sandbox sandboxes as Pods of an
// existing cluster through k8s.io/client-go.
//
// Object layout. A group (an env instance or an agent) is a set of objects
// sharing the label agentenv.io/sandbox=<group id>: one Pod, one Service and
// one Secret (the workload's environment, so API keys are not in the Pod
// spec) per workload, a NetworkPolicy when the sandbox has an allowlist,
// and an image pull Secret when one is configured.
// One Pod per workload rather than one Pod with many containers because
// envdeploy starts workloads one at a time (Group.Run) and a Pod's
// containers cannot be added after it is created; it also lets the
// scheduler spread a wide env over nodes and gives every workload its own
// events and logs. Every object of a workload carries the labels agentenv.io/store,
// agentenv.io/instance and agentenv.io/kind, and the annotation
// agentenv.io/labels with the full envdeploy label set (owner process,
// expiry, persistence), which Prune decides on.
//
// Images. Nodes pull images; they cannot load the store's tarballs. A
// workload whose image the image store owns (Options.Images) and whose
// tarball the deploy has is pushed to Config.Registry (default the image
// store's host) once per PushCache, and its Pod names it
// <registry>/<repo>@sha256:<manifest digest>; other images go into the
// Pod as written. Config.ImagePullSecret names a docker config JSON in the
// secret store (Options.Secrets): each group gets it as a
// kubernetes.io/dockerconfigjson Secret, labelled like its other objects,
// named in its Pods' imagePullSecrets, and the push uses its credentials
// for the registry.
//
// A deploy_sandbox sandbox is a group with one workload, "main", whose Pod
// is reached through the API server's exec: Exec, WriteFile, ReadFile,
// Stat and CopyOut (an exec of tar read by sandbox.ReadTarTree) need sh,
// cat, stat and tar in the image.
//
// Limits are enforced by the cluster: the TTL is the Pod's
// activeDeadlineSeconds, cpu and memory are its requests and limits, and an
// allowlist network policy is a NetworkPolicy (refused unless the config
// says the cluster's CNI enforces them). Group.Run waits for the Pod to run
// at most Config.DeployTimeout and fails early on an image that cannot be
// pulled, with the Pod's events in the error.
//
// Usage:
//
//	cfg, _ := kubernetes.DecodeConfig(raw) // [sandbox.providers.kubernetes.config]
//	p, err := kubernetes.New(cfg, &kubernetes.Options{StoreID: storeID, Images: set.Images, Secrets: set.Secrets})
//	sb, err := p.CreateSandbox(ctx, sandbox.Spec{Mode: sandbox.ModeContainer, Image: ref})
package kubernetes
