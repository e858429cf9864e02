package kubernetes

import "k8s.io/client-go/rest"

func restFor(host string) *rest.Config { return &rest.Config{Host: host} }
