package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentenv/agentenv/registry"
)

// SecretFactory returns a store holding exactly the given secrets (and
// possibly unrelated others).
type SecretFactory func(t *testing.T, secrets map[string]string) registry.SecretStore

// RunSecretStore runs the SecretStore conformance suite, including
// reference resolution through it.
func RunSecretStore(t *testing.T, newStore SecretFactory) {
	ctx := context.Background()
	t.Run("Get", func(t *testing.T) {
		s := newStore(t, map[string]string{"AGENTENV_ST_KEY": "v1", "AGENTENV_ST_EMPTY": "", "AGENTENV_ST_SP": "a b=c"})
		for k, want := range map[string]string{"AGENTENV_ST_KEY": "v1", "AGENTENV_ST_EMPTY": "", "AGENTENV_ST_SP": "a b=c"} {
			v, ok, err := s.Get(ctx, k)
			if err != nil || !ok || v != want {
				t.Errorf("Get(%s) = %q, %v, %v; want %q", k, v, ok, err, want)
			}
		}
		if v, ok, err := s.Get(ctx, "AGENTENV_ST_MISSING_"+registry.RandomSuffix(6)); ok || err != nil || v != "" {
			t.Errorf("Get(missing) = %q, %v, %v", v, ok, err)
		}
	})
	t.Run("Resolve", func(t *testing.T) {
		s := newStore(t, map[string]string{"AGENTENV_ST_TOKEN": "tok-123"})
		noEnv := func(string) (string, bool) { return "", false }
		cases := []struct{ in, want string }{
			{"plain", "plain"},
			{"secret:AGENTENV_ST_TOKEN", "tok-123"},
			{"secret:AGENTENV_ST_TOKEN?fallback", "tok-123"},
			{"secret:AGENTENV_ST_NOPE?fallback", "fallback"},
			{"secret:AGENTENV_ST_NOPE?", ""},
			{"env:AGENTENV_ST_NOPE?claude-sonnet", "claude-sonnet"},
		}
		for _, c := range cases {
			got, err := registry.Resolve(ctx, c.in, s, noEnv)
			if err != nil || got != c.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", c.in, got, err, c.want)
			}
		}
		for _, in := range []string{"secret:AGENTENV_ST_NOPE", "env:AGENTENV_ST_NOPE", "secret:"} {
			_, err := registry.Resolve(ctx, in, s, noEnv)
			var re *registry.ReferenceError
			if !errors.Is(err, registry.ErrUnresolved) || !errors.As(err, &re) || !strings.Contains(err.Error(), in) {
				t.Errorf("Resolve(%q): %v, want ErrUnresolved naming the reference", in, err)
			}
		}
		if _, err := registry.Resolve(ctx, "secret:AGENTENV_ST_TOKEN", nil, noEnv); !errors.Is(err, registry.ErrUnresolved) {
			t.Errorf("secret: without a store: %v", err)
		}
		// The error never carries the value of another secret.
		_, err := registry.Resolve(ctx, "secret:AGENTENV_ST_NOPE", s, noEnv)
		if err != nil && strings.Contains(err.Error(), "tok-123") {
			t.Errorf("error leaks a secret: %v", err)
		}
	})
}
