package kubernetes

// PodImage exposes podImage to the external tests, which drive it against
// a real registry without a cluster.
var PodImage = (*Provider).podImage

// PullSecretName exposes the name of a group's image pull Secret.
var PullSecretName = pullSecretName
