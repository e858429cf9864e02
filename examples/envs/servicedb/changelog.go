package servicedb

import (
	"context"
	"fmt"
)

// ChangelogTable records the row changes made to the public schema's
// tables, so that verifiers and triggers can see what an agent changed;
// the gateway reads MAX(id) as each tool call's changelog_id.
const ChangelogTable = "_changelog"

// installChangelog creates public._changelog, a row trigger on every
// table of the public schema that writes to it, and an event trigger
// that puts the row trigger on each table created later (by a dump or an
// agent's DDL). Idempotent. Rows written while the setting
// agentenv.changelog is 'off' (a data/add load: the state before the
// agent) are not recorded.
//
// One row per changed row: id, changed_at, table_name, operation
// (INSERT, UPDATE, DELETE), old_row and new_row (the row as JSON; null
// where it does not exist).
const installChangelog = `
CREATE TABLE IF NOT EXISTS public._changelog (
	id bigserial PRIMARY KEY,
	changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	table_name text NOT NULL,
	operation text NOT NULL,
	old_row jsonb,
	new_row jsonb
);
CREATE OR REPLACE FUNCTION public._changelog_row() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
	IF current_setting('agentenv.changelog', true) = 'off' THEN
		RETURN NULL;
	END IF;
	INSERT INTO public._changelog (table_name, operation, old_row, new_row) VALUES (TG_TABLE_NAME, TG_OP,
		CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) END, CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) END);
	RETURN NULL;
END
$fn$;
CREATE OR REPLACE FUNCTION public._changelog_attach(rel regclass) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
	IF rel = 'public._changelog'::regclass OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = '_changelog') THEN
		RETURN;
	END IF;
	EXECUTE format('CREATE TRIGGER _changelog AFTER INSERT OR UPDATE OR DELETE ON %s FOR EACH ROW EXECUTE FUNCTION public._changelog_row()', rel);
END
$fn$;
CREATE OR REPLACE FUNCTION public._changelog_on_create() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE r record;
BEGIN
	FOR r IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE object_type = 'table' AND schema_name = 'public' LOOP
		PERFORM public._changelog_attach(r.objid::regclass);
	END LOOP;
END
$fn$;
DROP EVENT TRIGGER IF EXISTS _changelog_on_create;
CREATE EVENT TRIGGER _changelog_on_create ON ddl_command_end WHEN TAG IN ('CREATE TABLE', 'CREATE TABLE AS', 'SELECT INTO')
	EXECUTE FUNCTION public._changelog_on_create();
SELECT public._changelog_attach(c.oid::regclass) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
	WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p');
`

// changelogOff keeps the rows of a load out of the changelog, for the
// rest of the load's transaction.
const changelogOff = "SET LOCAL agentenv.changelog = 'off'"

// InstallChangelog sets up the changelog (installChangelog) in the
// database; the db server runs it at start, and again with each data/reset,
// which drops it with the rest of the public schema.
// A database where it cannot be installed (event triggers need a
// superuser) serves without one: the reset then leaves it out too.
func (db *DB) InstallChangelog(ctx context.Context) error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if _, err := db.pool.Exec(ctx, installChangelog); err != nil {
		return fmt.Errorf("install the changelog: %w", err)
	}
	db.changelog = true
	return nil
}
