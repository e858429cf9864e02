package servicedb

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ConsolePath is where the db server serves its web console, beside MCP.
const ConsolePath = "/console/"

// PageRows is the number of rows a table page of the console shows.
const PageRows = 50

// consoleTimeout bounds each statement the console runs: a page must not
// hold a connection the tools need.
const consoleTimeout = 10 * time.Second

// Console is the read-only web console of the database, served under
// ConsolePath (New mounts it):
//
//	GET .                       the tables, their row counts and a query form
//	GET table?name=T&page=N     the rows of T, PageRows a page, in primary-key order
//	GET query?sql=S             one read-only query (at most Options.MaxRows rows)
//
// Links are relative, so the console works behind a proxy that mounts it
// under another prefix (the gateway's /website/<key>/). Everything runs
// in READ ONLY transactions: the console cannot change the database.
// Bad input answers 400 (404 for an unknown table) with the reason on the
// page, naming the parameter.
func (db *DB) Console() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+ConsolePath+"{$}", db.consoleTables)
	mux.HandleFunc("GET "+ConsolePath+"table", db.consoleTable)
	mux.HandleFunc("GET "+ConsolePath+"query", db.consoleQuery)
	mux.HandleFunc(ConsolePath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			renderPage(w, http.StatusMethodNotAllowed, &page{Title: "Method not allowed", Error: "the console is read-only: GET only"})
			return
		}
		renderPage(w, http.StatusNotFound, &page{Title: "Not found", Error: "no console page " + r.URL.Path})
	})
	return mux
}

// tableCount is one line of the console's table list.
type tableCount struct {
	Name string
	Rows int64
}

// page is what the console's template shows; empty parts are left out.
type page struct {
	Title  string
	Error  string
	Tables []tableCount
	// SQL fills the query form.
	SQL    string
	Result *Rows
	// Table paging.
	Table            string
	Page, Pages      int
	Total            int64
	Prev, Next       int // page numbers; 0 = none
	ShowQueryForm    bool
	TruncatedAtLimit int
}

var consoleTemplate = template.Must(template.New("console").Funcs(template.FuncMap{
	"cell": func(v any) template.HTML {
		if v == nil {
			return `<span class="null">NULL</span>`
		}
		return template.HTML(template.HTMLEscapeString(fmt.Sprint(v)))
	},
}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{{.Title}} · db console</title>
<style>
body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f4f4f4}.null{color:#999;font-style:italic}.error{color:#b00;white-space:pre-wrap}textarea{width:100%;font-family:monospace}nav a{margin-right:1em}
</style></head><body>
<nav><a href="./">Tables</a></nav>
<h1>{{.Title}}</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
{{if .Tables}}<table id="tables"><tr><th>Table</th><th>Rows</th></tr>
{{range .Tables}}<tr><td><a href="table?name={{.Name}}">{{.Name}}</a></td><td>{{.Rows}}</td></tr>
{{end}}</table>{{end}}
{{if .Table}}<p>Rows {{.Total}} · page {{.Page}} of {{.Pages}}
{{if .Prev}}<a rel="prev" href="table?name={{.Table}}&amp;page={{.Prev}}">previous</a>{{end}} {{if .Next}}<a rel="next" href="table?name={{.Table}}&amp;page={{.Next}}">next</a>{{end}}</p>{{end}}
{{with .Result}}<table id="rows"><tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{cell .}}</td>{{end}}</tr>
{{end}}</table>{{if .Truncated}}<p>Only the first {{$.TruncatedAtLimit}} rows are shown.</p>{{end}}{{end}}
{{if .ShowQueryForm}}<h2>Read-only query</h2>
<form action="query" method="get"><textarea name="sql" rows="5">{{.SQL}}</textarea><br><button type="submit">Run</button></form>{{end}}
</body></html>
`))

func renderPage(w http.ResponseWriter, status int, p *page) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = consoleTemplate.Execute(w, p)
}

func (db *DB) consoleTables(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), consoleTimeout)
	defer cancel()
	p := &page{Title: "Tables", ShowQueryForm: true}
	names, err := db.tables(ctx)
	if err == nil {
		for _, n := range names {
			res, cerr := db.consoleRead(ctx, 1, "SELECT count(*) FROM public."+pgx.Identifier{n}.Sanitize())
			if cerr != nil {
				err = cerr
				break
			}
			c, _ := res.Rows[0][0].(int64)
			p.Tables = append(p.Tables, tableCount{Name: n, Rows: c})
		}
	}
	if err != nil {
		renderPage(w, http.StatusInternalServerError, &page{Title: "Tables", Error: "database: " + err.Error()})
		return
	}
	if len(names) == 0 {
		p.Error = "The public schema has no tables."
	}
	renderPage(w, http.StatusOK, p)
}

func (db *DB) consoleTable(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), consoleTimeout)
	defer cancel()
	q := r.URL.Query()
	name := q.Get("name")
	n := 1
	if v := q.Get("page"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			renderPage(w, http.StatusBadRequest, &page{Title: "Bad request", Error: fmt.Sprintf("page: %q is not a page number (1, 2, ...)", v)})
			return
		}
	}
	if name == "" {
		renderPage(w, http.StatusBadRequest, &page{Title: "Bad request", Error: "name: required (the table to show)"})
		return
	}
	names, err := db.tables(ctx)
	if err != nil {
		renderPage(w, http.StatusInternalServerError, &page{Title: name, Error: "database: " + err.Error()})
		return
	}
	if !slices.Contains(names, name) {
		renderPage(w, http.StatusNotFound, &page{Title: "Not found", Error: fmt.Sprintf("name: no table %q in the public schema", name)})
		return
	}
	ident := "public." + pgx.Identifier{name}.Sanitize()
	count, err := db.consoleRead(ctx, 1, "SELECT count(*) FROM "+ident)
	if err != nil {
		renderPage(w, http.StatusInternalServerError, &page{Title: name, Error: "database: " + err.Error()})
		return
	}
	p := &page{Title: name, Table: name, Page: n}
	p.Total, _ = count.Rows[0][0].(int64)
	p.Pages = max(1, int((p.Total+PageRows-1)/PageRows))
	order, err := db.orderOf(ctx, ident)
	if err != nil {
		renderPage(w, http.StatusInternalServerError, &page{Title: name, Error: "database: " + err.Error()})
		return
	}
	rows, err := db.consoleRead(ctx, PageRows, fmt.Sprintf("SELECT * FROM %s ORDER BY %s LIMIT %d OFFSET %d", ident, order, PageRows, (n-1)*PageRows))
	if err != nil {
		renderPage(w, http.StatusInternalServerError, &page{Title: name, Error: "database: " + err.Error()})
		return
	}
	p.Result = &rows
	if n > 1 {
		p.Prev = min(n-1, p.Pages)
	}
	if n < p.Pages {
		p.Next = n + 1
	}
	renderPage(w, http.StatusOK, p)
}

func (db *DB) consoleQuery(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), consoleTimeout)
	defer cancel()
	sql := r.URL.Query().Get("sql")
	p := &page{Title: "Query", SQL: sql, ShowQueryForm: true, TruncatedAtLimit: db.opts.MaxRows}
	if strings.TrimSpace(sql) == "" {
		p.Error = "sql: required (one read-only statement)"
		renderPage(w, http.StatusBadRequest, p)
		return
	}
	res, err := db.consoleRead(ctx, db.opts.MaxRows, sql)
	if err != nil {
		p.Error = "sql: " + err.Error()
		status := http.StatusBadRequest
		if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) {
			status = http.StatusInternalServerError // not the statement's fault
		}
		renderPage(w, status, p)
		return
	}
	p.Result = &res
	renderPage(w, http.StatusOK, p)
}

// consoleRead is readOnly after a pending data/reset, under the console's
// statement timeout.
func (db *DB) consoleRead(ctx context.Context, max int, sql string) (Rows, error) {
	if err := db.applyPending(ctx); err != nil {
		return Rows{}, err
	}
	return db.readOnly(ctx, max, sql)
}

// orderOf is an ORDER BY list for ident: its primary key's columns, else
// the physical order, so that pages do not overlap.
func (db *DB) orderOf(ctx context.Context, ident string) (string, error) {
	res, err := db.readOnly(ctx, 64, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, ident)
	if err != nil {
		return "", err
	}
	if len(res.Rows) == 0 {
		return "ctid", nil
	}
	cols := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		s, _ := r[0].(string)
		cols[i] = pgx.Identifier{s}.Sanitize()
	}
	return strings.Join(cols, ", "), nil
}
