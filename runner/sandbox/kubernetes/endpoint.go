package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// endpoint is where the runner reaches port of Pod name: the Service's
// cluster address, or a loopback port forwarded to the Pod.
func (p *Provider) endpoint(ctx context.Context, gid, name string, port int) (string, error) {
	if p.cfg.EndpointMode != EndpointPortForward {
		return "http://" + name + "." + p.ns + ".svc:" + strconv.Itoa(port), nil
	}
	local, stop, err := p.portForward(ctx, name, port)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.forwards[gid] = append(p.forwards[gid], stop)
	p.mu.Unlock()
	return "http://127.0.0.1:" + strconv.Itoa(local) + "", nil
}

// portForward forwards a free loopback port to port of Pod name through
// the API server; stop ends it. The forward lives as long as this process
// (or until the group's Terminate).
//
// client-go drops the whole forward (its one SPDY connection) the first
// time the Pod refuses a connection, which a readiness poll does while
// the workload is not listening yet. So when the forward is lost it is
// dialled again on the same local port, until stop or until a dial fails
// (the Pod is gone); callers that poll see refused connections for the
// moment in between.
func (p *Provider) portForward(ctx context.Context, name string, port int) (local int, stop func(), err error) {
	rt, upgrader, err := spdy.RoundTripperFor(p.rc)
	if err != nil {
		return 0, nil, fmt.Errorf("kubernetes: port-forward to %s: %w", name, err)
	}
	u := p.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.ns).Name(name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stopCh := make(chan struct{})
	forwarder := func(local int) (*portforward.PortForwarder, chan struct{}, error) {
		ready := make(chan struct{})
		fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{strconv.Itoa(local) + ":" + strconv.Itoa(port)}, stopCh, ready, io.Discard, io.Discard)
		if err != nil {
			return nil, nil, fmt.Errorf("kubernetes: port-forward to %s: %w", name, err)
		}
		return fw, ready, nil
	}
	fw, ready, err := forwarder(0)
	if err != nil {
		return 0, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	var once sync.Once
	stop = func() { once.Do(func() { close(stopCh) }) }
	select {
	case <-ready:
	case err := <-done:
		return 0, nil, p.wrap("port-forward to "+name, err)
	case <-ctx.Done():
		stop()
		return 0, nil, ctx.Err()
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) == 0 {
		stop()
		return 0, nil, fmt.Errorf("kubernetes: port-forward to %s: no local port: %v", name, err)
	}
	local = int(ports[0].Local)
	go p.keepForwarding(name, local, stopCh, done, forwarder)
	return local, stop, nil
}

// keepForwarding dials a lost forward again on the same local port until
// stopCh is closed or the forward ends for another reason.
func (p *Provider) keepForwarding(name string, local int, stopCh <-chan struct{}, done chan error, forwarder func(int) (*portforward.PortForwarder, chan struct{}, error)) {
	for {
		var err error
		select {
		case <-stopCh:
			return
		case err = <-done:
		}
		select {
		case <-stopCh:
			return
		default:
		}
		if !errors.Is(err, portforward.ErrLostConnectionToPod) {
			p.log.Debug("kubernetes: port-forward ended", "pod", name, "local_port", local, "error", err)
			return
		}
		fw, _, err := forwarder(local)
		if err != nil {
			p.log.Debug("kubernetes: port-forward not restarted", "pod", name, "error", err)
			return
		}
		go func() { done <- fw.ForwardPorts() }()
	}
}

// stopForwards ends the port-forwards of group gid.
func (p *Provider) stopForwards(gid string) {
	p.mu.Lock()
	stops := p.forwards[gid]
	delete(p.forwards, gid)
	p.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
