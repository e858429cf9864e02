# Sourced by .ci/run: installs PostgreSQL from Debian's packages when it is
# missing and starts a throwaway server on a loopback port, as the postgres
# user (PostgreSQL refuses to run as root). Exports AGENTENV_TEST_POSTGRES_DSN
# for the document-store conformance suite.

pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return 0; }
	done
	return 1
}

start_postgres() {
	local bin port dir
	if ! bin=$(pg_bin); then
		echo "== installing PostgreSQL from Debian's packages"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
		bin=$(pg_bin)
	fi
	port="${AGENTENV_TEST_POSTGRES_PORT:-55432}"
	dir=$(mktemp -d /tmp/agentenv-pg.XXXXXX)
	chown postgres "$dir"
	local as_pg=(env)
	[ "$(id -u)" = 0 ] && as_pg=(runuser -u postgres --)
	"${as_pg[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres >/dev/null
	"${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
		-o "-k $dir -h 127.0.0.1 -p $port -c fsync=off" start >/dev/null
	export AGENTENV_TEST_POSTGRES_DSN="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=disable"
	# Stop the server whatever way the tests end.
	PG_STOP=("${as_pg[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast stop)
	PG_DIR=$dir
	trap stop_postgres EXIT
	echo "== PostgreSQL on 127.0.0.1:$port"
}

stop_postgres() {
	"${PG_STOP[@]}" >/dev/null 2>&1 || true
	rm -rf "$PG_DIR"
}
