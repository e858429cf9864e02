package dockercontainer

// Labels exposes labels to the external tests.
var Labels = labels
