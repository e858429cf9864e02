// Package sqldump loads and writes PostgreSQL SQL dumps without psql or
// pg_dump, so a FROM scratch db server can move its state.
//
// Load runs a dump statement by statement on one connection (the caller
// brackets it in a transaction), naming the dump line of a statement the
// database refuses (*LoadError). It reads plain SQL and pg_dump's plain
// format: COPY ... FROM stdin blocks are fed to the COPY, and psql
// meta-command lines (\connect, \restrict) are skipped. Export writes the
// public schema (sequences, tables, rows, constraints, indexes) as a dump
// Load reads back.
//
//	if err := sqldump.Load(ctx, conn.PgConn(), dump); err != nil {
//		var le *sqldump.LoadError // le.Line, le.Err
//	}
package sqldump
