// Command unready is a test fixture: a website that listens on
// $MCP_HOST:$PORT and answers every request 503, the way an app stuck on
// a missing dependency does. Deploys using it must fail within the
// website's ready timeout, naming it.
package main

import (
	"net"
	"net/http"
	"os"
)

func main() {
	host := os.Getenv("MCP_HOST")
	if host == "" {
		host = "0.0.0.0"
	}
	_ = http.ListenAndServe(net.JoinHostPort(host, os.Getenv("PORT")), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "still starting", http.StatusServiceUnavailable)
	}))
}
