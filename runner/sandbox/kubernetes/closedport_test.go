package kubernetes_test

import (
	"net"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"
)

// closedPortREST is a client config for a loopback port nothing listens on.
func closedPortREST(t *testing.T) *rest.Config {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return &rest.Config{Host: "http://127.0.0.1:" + strconv.Itoa(port)}
}
