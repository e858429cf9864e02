// Package chromiumtest gates tests that drive Debian's chromium: they skip
// where it is not installed, and fail under CI=true, where a missing
// browser means the computer-use tests silently stopped running.
package chromiumtest

import (
	"os"
	"testing"

	"github.com/agentenv/agentenv/internal/chromium"
)

// Need returns the chromium binary, or skips t (fails it under CI=true).
func Need(t testing.TB) string {
	t.Helper()
	p, err := chromium.Path()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return p
}
