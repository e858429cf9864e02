package kubernetes

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/agentenv/agentenv/runner/sandbox"
)

// networkPolicy is the egress NetworkPolicy of an allowlist: DNS, and the
// CIDRs and the addresses the hosts resolve to now. A NetworkPolicy holds
// addresses, not names, so a host is pinned to its addresses at creation;
// a wildcard host cannot be resolved and is refused.
func networkPolicy(ctx context.Context, g *Group, pol sandbox.NetworkPolicy) (*networkingv1.NetworkPolicy, error) {
	var peers []networkingv1.NetworkPolicyPeer
	add := func(p netip.Prefix) {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.Masked().String()}})
	}
	for _, c := range pol.AllowCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, fmt.Errorf("network_policy.allow_cidrs: %q is not a CIDR", c)
		}
		add(p)
	}
	for _, h := range pol.AllowHosts {
		host := strings.TrimSpace(h)
		if hp, _, err := net.SplitHostPort(host); err == nil {
			host = hp
		}
		if strings.Contains(host, "*") {
			return nil, fmt.Errorf("network_policy.allow_hosts: %q: a NetworkPolicy holds addresses, so wildcard hosts cannot be enforced on kubernetes", h)
		}
		if a, err := netip.ParseAddr(host); err == nil {
			add(netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, fmt.Errorf("network_policy.allow_hosts: %q does not resolve: %v", h, err)
		}
		for _, a := range addrs {
			a = a.Unmap()
			add(netip.PrefixFrom(a, a.BitLen()))
		}
	}
	udp, tcp, dns := corev1.ProtocolUDP, corev1.ProtocolTCP, intstr.FromInt32(53)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: meta(objectName(g.id, "egress"), g.id, "", "", g.labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: labelValue(g.id)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				// Names must resolve for the allowed hosts to be reached.
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}}},
			},
		},
	}
	if len(peers) > 0 {
		np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{To: peers})
	}
	return np, nil
}
