package sqldump

import (
	"regexp"
	"strings"
)

// statement is one SQL statement of a dump and the line it starts on;
// copyData holds the rows of a COPY ... FROM stdin.
type statement struct {
	sql      string
	line     int
	copyData *string
}

var copyFromStdin = regexp.MustCompile(`(?is)^\s*COPY\s.*\sFROM\s+stdin\b`)

// splitDump cuts a dump into statements at semicolons outside quotes,
// dollar quotes and comments. psql meta-command lines (a backslash first,
// such as pg_dump's \connect or \restrict) are skipped, and the data rows
// after a COPY ... FROM stdin, up to the "\." line, go with the COPY.
func splitDump(s string) []statement {
	var out []statement
	line := 1
	i := 0
	for i < len(s) {
		// Skip blanks and comments between statements.
		switch {
		case s[i] == '\n':
			line++
			i++
			continue
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\r':
			i++
			continue
		case strings.HasPrefix(s[i:], "--"):
			i = skipLine(s, i)
			continue
		case s[i] == '\\':
			i = skipLine(s, i)
			continue
		}
		start, startLine := i, line
		i, line = scanStatement(s, i, line)
		st := statement{sql: strings.TrimSpace(strings.TrimSuffix(s[start:i], ";")), line: startLine}
		if st.sql == "" {
			continue
		}
		if copyFromStdin.MatchString(st.sql) {
			// The rows start on the line after the statement's end.
			j := skipLine(s, i)
			if j < len(s) {
				j++ // the newline ending the COPY line
				line++
			}
			var data strings.Builder
			for j < len(s) {
				end := strings.IndexByte(s[j:], '\n')
				var l string
				if end < 0 {
					l, end = s[j:], len(s)-j
				} else {
					l = s[j : j+end]
				}
				j += end + 1
				line++
				if strings.TrimRight(l, "\r") == `\.` {
					break
				}
				data.WriteString(l)
				data.WriteString("\n")
			}
			d := data.String()
			st.copyData = &d
			i = min(j, len(s))
		}
		out = append(out, st)
	}
	return out
}

// skipLine returns the index after the newline ending the line at i (the
// newline itself is left for the caller to count, except at the end).
func skipLine(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(s)
}

// scanStatement returns the index after the statement starting at i (past
// its semicolon, or the end of s) and the line it ends on.
func scanStatement(s string, i, line int) (int, int) {
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ';':
			return i + 1, line
		case c == '-' && strings.HasPrefix(s[i:], "--"):
			i = skipLine(s, i)
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				end = len(s) - i - 2
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i = min(i+2+end+2, len(s))
		case c == '\'' || c == '"':
			// E'...' strings escape with a backslash; others double the quote.
			backslash := c == '\'' && i > 0 && (s[i-1] == 'E' || s[i-1] == 'e')
			j := i + 1
			for j < len(s) {
				if backslash && s[j] == '\\' {
					j += 2
					continue
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			j = min(j+1, len(s))
			line += strings.Count(s[i:j], "\n")
			i = j
		case c == '$':
			tag := dollarTag(s[i:])
			if tag == "" {
				i++
				continue
			}
			end := strings.Index(s[i+len(tag):], tag)
			j := len(s)
			if end >= 0 {
				j = i + len(tag) + end + len(tag)
			}
			line += strings.Count(s[i:j], "\n")
			i = j
		default:
			i++
		}
	}
	return i, line
}

var dollarTagRE = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*)?\$`)

// dollarTag is the $tag$ opening a dollar-quoted string at the start of s,
// or "" ($1 parameters and the like).
func dollarTag(s string) string { return dollarTagRE.FindString(s) }
