package protocol

import (
	"strings"
	"testing"
)

func TestRoleToken(t *testing.T) {
	for _, role := range []string{"default", "agent", "a.b.c", "ünï code", "*"} {
		tok := RoleToken("ctl", role)
		if got, ok := RoleOfToken("ctl", tok); !ok || got != role {
			t.Errorf("%q: round trip gave %q %v", role, got, ok)
		}
		if _, ok := RoleOfToken("other", tok); ok {
			t.Errorf("%q: accepted under another control token", role)
		}
		if _, ok := RoleOfToken("", tok); ok {
			t.Errorf("%q: accepted without a control token", role)
		}
	}
	agent := RoleToken("ctl", "agent")
	forged := strings.Replace(agent, "YWdlbnQ", "YWRtaW4", 1) // agent → admin, same MAC
	for _, bad := range []string{"", "ctl", "aer1.", "aer1..", "aer1.YWdlbnQ", forged, agent + "x", strings.TrimPrefix(agent, "aer1."), "aer1." + "." + strings.SplitN(agent, ".", 3)[2]} {
		if role, ok := RoleOfToken("ctl", bad); ok {
			t.Errorf("%q accepted as %q", bad, role)
		}
	}
}
