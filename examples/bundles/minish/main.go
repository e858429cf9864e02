// Command minish is a very small shell for FROM scratch test images: no
// image can be pulled here, so the coding-task bundle's test container is
// this static binary installed as /bin/sh. It runs `sh -c SCRIPT` where
// SCRIPT is commands joined by && or ; with an optional "> FILE" each:
// true, false, exit N, echo, cat, test -f|-d, grep -q TEXT FILE (a
// substring), sleep SECONDS, printenv NAME; words may be quoted and $NAME
// is replaced by the variable. `sh serve [PORT]` is the container's main
// process: it waits (answering "ok" over HTTP on PORT when given).
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	switch {
	case len(args) >= 1 && args[0] == "serve":
		serve(args[1:])
	case len(args) == 2 && args[0] == "-c":
		os.Exit(script(args[1]))
	default:
		fmt.Fprintln(os.Stderr, "usage: sh -c SCRIPT | sh serve [PORT]")
		os.Exit(2)
	}
}

func serve(args []string) {
	if len(args) == 1 {
		go func() {
			_ = http.ListenAndServe(":"+args[0], http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }))
		}()
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}

// script runs commands joined by && (stop at the first failure) or ;.
func script(s string) int {
	code := 0
	for _, seq := range strings.Split(s, ";") {
		for _, cmd := range strings.Split(seq, "&&") {
			if code = command(strings.TrimSpace(cmd)); code != 0 {
				break
			}
		}
	}
	return code
}

func command(line string) int {
	if line == "" {
		return 0
	}
	out := io.Writer(os.Stdout)
	if i := strings.LastIndex(line, ">"); i >= 0 {
		target := words(line[i+1:])
		if len(target) != 1 {
			fmt.Fprintln(os.Stderr, "minish: want one file after >")
			return 2
		}
		_ = os.MkdirAll(filepath.Dir(target[0]), 0o755)
		f, err := os.Create(target[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "minish:", err)
			return 1
		}
		defer f.Close()
		out, line = f, line[:i]
	}
	w := words(line)
	switch w[0] {
	case "true":
		return 0
	case "false":
		return 1
	case "exit":
		if len(w) > 1 {
			n, _ := strconv.Atoi(w[1])
			return n
		}
		return 0
	case "echo":
		fmt.Fprintln(out, strings.Join(w[1:], " "))
		return 0
	case "printenv":
		if len(w) == 2 {
			if v, ok := os.LookupEnv(w[1]); ok {
				fmt.Fprintln(out, v)
				return 0
			}
		}
		return 1
	case "cat":
		for _, f := range w[1:] {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "minish: cat:", err)
				return 1
			}
			out.Write(b)
		}
		return 0
	case "test":
		if len(w) == 3 && (w[1] == "-f" || w[1] == "-d") {
			fi, err := os.Stat(w[2])
			if err == nil && fi.IsDir() == (w[1] == "-d") {
				return 0
			}
		}
		return 1
	case "grep":
		if len(w) == 4 && w[1] == "-q" {
			b, err := os.ReadFile(w[3])
			if err == nil && strings.Contains(string(b), w[2]) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "%s does not contain %q\n", w[3], w[2])
		}
		return 1
	case "sleep":
		if len(w) == 2 {
			s, _ := strconv.ParseFloat(w[1], 64)
			time.Sleep(time.Duration(s * float64(time.Second)))
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "minish: %s: not found\n", w[0])
	return 127
}

// words splits a command into words: quotes group, $NAME expands.
func words(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	flush := func() {
		if in {
			out = append(out, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote, in = c, true
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			flush()
		case c == '$' && quote != '\'':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			cur.WriteString(os.Getenv(s[i+1 : j]))
			in, i = true, j-1
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	if len(out) == 0 {
		return []string{"true"}
	}
	return out
}
