package agentsdk_test

import "strings"

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
