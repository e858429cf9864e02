package didyoumean

import (
	"fmt"
	"sort"
	"strings"
)

// Closest returns the candidate closest to name, or "" when none is close
// enough to be a typo of it. Ties go to the earlier candidate.
func Closest(name string, candidates []string) string {
	best, bestD := "", 1<<30
	lname := strings.ToLower(name)
	for _, c := range candidates {
		if d := distance(lname, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len([]rune(name))/3) {
		return best
	}
	return ""
}

// Hint is `; did you mean "X"?` for the closest candidate, or "".
func Hint(name string, candidates []string) string {
	if c := Closest(name, candidates); c != "" {
		return fmt.Sprintf("; did you mean %q?", c)
	}
	return ""
}

// Known is " (known: a, b, c)": the candidates sorted, or "" when there
// are none.
func Known(candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	s := append([]string(nil), candidates...)
	sort.Strings(s)
	return " (known: " + strings.Join(s, ", ") + ")"
}

// Suffix is Hint followed by Known: what follows an "unknown X %q" message.
func Suffix(name string, candidates []string) string {
	return Hint(name, candidates) + Known(candidates)
}

// distance is the Levenshtein edit distance between a and b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
