// Package gormdoc is the DocumentStore shared by the SQLite and PostgreSQL
// backends: one table per collection (docs_<collection>), one JSON text
// column per document, filters and ordering of records evaluated in Go as
// the reference does.
//
// The backends differ only in a Dialect: how to open, how to serialise the
// writers of one id (SQLite: BEGIN IMMEDIATE through the DSN; PostgreSQL: a
// transaction-scoped advisory lock on the id), the text type of key columns
// (PostgreSQL uses COLLATE "C" so both list ids in the same byte order), and
// which errors mean "the database is not reachable".
//
// Why a lock per id rather than retrying on the unique (id, version) key:
// with 50 writers of one id, optimistic retries starve some of them; a lock
// makes every put succeed on its first try and keeps versions gap-free.
package gormdoc
