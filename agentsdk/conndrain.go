package agentsdk

import (
	"net"
	"net/http"
	"sync"
)

// connDrain closes a server's unused connections as soon as shutdown
// starts. http.Server.Shutdown closes idle connections at once but counts
// a connection that has not sent its first request as busy for 5 s, so a
// client that pre-dials or pools a connection it never uses would hold
// the drain that long. Connections with a request in flight are left to
// finish within the grace period; each is closed when it turns idle.
//
// A connection whose first request header is still arriving when
// shutdown starts is closed too, as if it had come after the listener
// closed; net/http takes the same risk with idle keep-alive connections.
//
// envsdk holds the same code: the SDKs may import no package of ours
// but protocol (internal/hygiene), so it cannot be shared.
type connDrain struct {
	mu       sync.Mutex
	conns    map[net.Conn]http.ConnState
	draining bool
}

// track is the http.Server.ConnState hook.
func (d *connDrain) track(c net.Conn, st http.ConnState) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		if d.draining {
			delete(d.conns, c)
			c.Close()
			return
		}
		if d.conns == nil {
			d.conns = make(map[net.Conn]http.ConnState)
		}
		d.conns[c] = st
	case http.StateActive:
		// Absent means drain closed it while its first request arrived.
		if _, ok := d.conns[c]; ok {
			d.conns[c] = st
		}
	case http.StateHijacked, http.StateClosed:
		delete(d.conns, c)
	}
}

// drain closes every connection with no request in flight, and from then
// on each connection as it turns new or idle. Register it with
// http.Server.RegisterOnShutdown: it then runs after the listeners close.
func (d *connDrain) drain() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	for c, st := range d.conns {
		if st != http.StateActive {
			delete(d.conns, c)
			c.Close()
		}
	}
}
