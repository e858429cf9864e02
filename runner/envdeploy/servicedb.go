package envdeploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentenv/agentenv/internal/imagebuild"
	"github.com/agentenv/agentenv/internal/pgserver"
	"github.com/agentenv/agentenv/internal/sqldump"
	"github.com/agentenv/agentenv/registry"
)

// Env state types (deploy_env env_state_type).
const (
	// StatePostgres is the only state type: one PostgreSQL per instance.
	StatePostgres = "postgres"
	// DBPort is the database workload's port inside a group.
	DBPort = 5432
	// DBConsolePath is where the db MCP server serves its read-only web
	// console (the example db server does); the gateway proxies it as the
	// website named after the server, which is the instance's db_web_url.
	DBConsolePath = "/console/"
)

// The Go packages of this module a service_db env is built from by
// default.
const (
	dbMCPPackage = "./examples/envs/servicedb/cmd/db-env"
	dbPackage    = "./images/postgres/agentenv-postgres"
)

// ServiceDBInput registers a service_db env (`env service-db put`).
type ServiceDBInput struct {
	ID string
	// EnvironmentName names the db MCP server; "" = "db".
	EnvironmentName string
	// DBMCP is the db MCP server; zero = the example db server of this
	// module (examples/envs/servicedb).
	DBMCP ImageInput
	// DB is the database workload; zero = agentenv-postgres built from
	// this module (the process provider runs it against the host's
	// PostgreSQL binaries). For Docker, DB.ImageRef names an image the
	// engine holds that serves PostgreSQL on $PGPORT (default 5432) with
	// trusted connections (docs/envtypes.md).
	DB ImageInput
	// DBHostClosure adds this host's PostgreSQL (binaries, modules, share
	// files, time zones, their shared-library closure and a postgres
	// user) to the database image built from DB's Go package or binary,
	// so that image runs on Docker without any pull.
	DBHostClosure bool
	// WriteRoles are the roles the db MCP server lets write.
	WriteRoles  []string
	Description string
}

func (in *ServiceDBInput) defaults() error {
	root, inModule := moduleRoot()
	for _, x := range []struct {
		in  *ImageInput
		pkg string
	}{{&in.DBMCP, dbMCPPackage}, {&in.DB, dbPackage}} {
		if x.in.GoPackage == "" && x.in.Binary == "" && x.in.Dockerfile == "" && x.in.ImageRef == "" {
			if !inModule {
				return &registry.InvalidError{Field: "source", Reason: "outside the agentenv source tree: give --db-mcp-binary/--db-mcp-image-ref and --db-binary/--db-image-ref"}
			}
			x.in.GoPackage, x.in.GoDir = x.pkg, root
		}
	}
	if in.EnvironmentName == "" {
		in.EnvironmentName = "db"
	}
	return nil
}

// PutServiceDB builds and registers a service_db env.
func (p *Putter) PutServiceDB(ctx context.Context, in ServiceDBInput) (*Env, error) {
	if err := registry.ValidateID(in.ID); err != nil {
		return nil, err
	}
	if err := in.defaults(); err != nil {
		return nil, err
	}
	if err := ValidEnvironmentName(in.EnvironmentName); err != nil {
		return nil, err
	}
	for _, r := range in.WriteRoles {
		if strings.TrimSpace(r) == "" || strings.Contains(r, ",") {
			return nil, &registry.InvalidError{Field: "write_role", Value: r, Reason: "must be a non-empty role name without commas"}
		}
	}
	if err := in.DBMCP.validate(); err != nil {
		return nil, fmt.Errorf("db MCP server: %w", err)
	}
	if err := in.DB.validate(); err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	p.printf("Building db MCP server image (FROM scratch)...")
	mcp, err := p.buildImage(ctx, registry.EnvImageArtifactID(in.ID)+"_db_mcp", in.DBMCP,
		imagebuild.Image{Env: map[string]string{"MCP_HOST": "0.0.0.0", "MCP_PORT": strconv.Itoa(MCPPort), "ENVIRONMENT_NAME": in.EnvironmentName},
			ExposedPorts: []int{MCPPort}}, "db MCP server image of env "+in.ID)
	if err != nil {
		return nil, err
	}
	p.printf("Building database image...")
	dbImg := imagebuild.Image{Env: map[string]string{"PGPORT": strconv.Itoa(DBPort)}, ExposedPorts: []int{DBPort},
		Entrypoint: "/agentenv-postgres"}
	if in.DBHostClosure {
		if in.DB.ImageRef != "" || in.DB.Dockerfile != "" {
			return nil, &registry.InvalidError{Field: "db_host_closure", Reason: "applies to a database built from a Go package or binary, not to --db-image-ref or a Dockerfile"}
		}
		bin, err := pgserver.BinDir()
		if err != nil {
			return nil, fmt.Errorf("--db-host-closure: %w", err)
		}
		tmp, err := os.MkdirTemp(p.TempDir, "agentenv-pgimage-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		if dbImg.Files, err = pgserver.ImageFiles(ctx, bin, tmp); err != nil {
			return nil, err
		}
		p.printf("Adding the host's PostgreSQL (%s) and its library closure: %d files...", bin, len(dbImg.Files))
	}
	db, err := p.buildImage(ctx, registry.EnvImageArtifactID(in.ID)+"_db", in.DB, dbImg, "database image of env "+in.ID)
	if err != nil {
		return nil, err
	}
	e := Env{ID: in.ID, Type: TypeServiceDB, EnvironmentName: in.EnvironmentName, ServiceName: in.EnvironmentName,
		EnvProviderType: ProviderGateway, DBMCPImageArtifactRef: refOf(mcp.image.Header), ImageName: mcp.image.ImageName,
		DBImageArtifactRef: refOf(db.image.Header), DBImageName: db.image.ImageName, DBWriteRoles: in.WriteRoles,
		Description: in.Description, Source: buildSource(in.DBMCP)}
	if mcp.binary != nil {
		e.BinaryArtifactRef = refOf(mcp.binary.Header)
	}
	if db.binary != nil {
		e.DBBinaryArtifactRef = refOf(db.binary.Header)
	}
	d, err := putDoc(ctx, p.Stores.docsFor(in.ID), registry.Envs, in.ID, e)
	if err != nil {
		return nil, err
	}
	e.Version = d.Version
	p.printf("Created ServiceDBEnv: id=%s version=%d environment_name=%s", e.ID, e.Version, e.EnvironmentName)
	return &e, nil
}

// EnvStateInstance is the env_state_instances record of one database.
// Connections are trusted inside the instance's group and on loopback,
// so its URLs hold no password.
type EnvStateInstance struct {
	EnvStateInstanceID string `json:"env_state_instance_id"`
	EnvStateType       string `json:"env_state_type"`
	EnvInstanceID      string `json:"env_instance_id"`
	EnvID              string `json:"env_id"`
	EnvVersion         int    `json:"env_version"`
	Status             string `json:"status"`
	// DBURL is reached from the host; InternalDBURL from the env's group.
	DBURL         string `json:"db_url"`
	InternalDBURL string `json:"internal_db_url"`
	SandboxID     string `json:"sandbox_id"`
	SandboxType   string `json:"sandbox_type"`
	// CopiedFrom is the state instance whose data it started with.
	CopiedFrom    string `json:"copied_from_env_state_instance_id,omitempty"`
	CreatedAtUTC  string `json:"created_at_utc"`
	ExpiresAtUTC  string `json:"expires_at_utc"`
	TornDownAtUTC string `json:"torn_down_at_utc,omitempty"`
}

// checkStateRequest refuses env_state_* for envs without state, and
// unknown state types.
func checkStateRequest(e *Env, req DeployRequest) error {
	if req.EnvStateType == "" && req.EnvStateInstanceID == "" {
		return nil
	}
	if e.Type != TypeServiceDB {
		f, v := "env_state_type", req.EnvStateType
		if v == "" {
			f, v = "env_state_instance_id", req.EnvStateInstanceID
		}
		return &registry.InvalidError{Field: f, Value: v, Reason: "env " + e.ID + " is a " + e.Type + " env; only service_db envs have a state instance"}
	}
	if req.EnvStateType != "" && req.EnvStateType != StatePostgres {
		return &registry.InvalidError{Field: "env_state_type", Value: req.EnvStateType, Reason: "must be " + StatePostgres}
	}
	return nil
}

// stateDB is the database workload of a service_db instance, running.
type stateDB struct {
	rec EnvStateInstance
}

// startStateDB runs the database workload of e in g, waits until it
// accepts sessions from the host, copies the data of the state instance
// req.EnvStateInstanceID into it when one is named, and returns the
// record to store.
func (d *Deployer) startStateDB(ctx context.Context, b Backend, g Group, e *Env, instID string, req DeployRequest, created, expires time.Time) (*stateDB, error) {
	src := d.Stores.source(ctx, e.DBImageArtifactRef, e.DBBinaryArtifactRef, e.DBImageName,
		fmt.Sprintf("database of env %s v%d", e.ID, e.Version), "agent-env env service-db put --id "+e.ID)
	// POSTGRES_HOST_AUTH_METHOD lets an image built like the official
	// postgres image start without a password; agentenv-postgres ignores it.
	w := Workload{Name: e.EnvironmentName + "-postgres", Role: TypeServiceDB, Source: src, Port: DBPort, PortEnv: "PGPORT",
		Publish: true, Env: map[string]string{"MCP_HOST": "0.0.0.0", "POSTGRES_HOST_AUTH_METHOD": "trust"}}
	ep, err := g.Run(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("database of env %s: %w", e.ID, err)
	}
	internal := strings.TrimPrefix(ep.Internal, "http://")
	host := strings.TrimPrefix(ep.Host, "http://")
	s := &stateDB{rec: EnvStateInstance{EnvStateInstanceID: registry.NewInstanceID(e.ID + "-db"), EnvStateType: StatePostgres,
		EnvInstanceID: instID, EnvID: e.ID, EnvVersion: e.Version, Status: StatusDeployed,
		DBURL: pgserver.URL(host), InternalDBURL: pgserver.URL(internal), SandboxID: g.ID(), SandboxType: b.Type(),
		CreatedAtUTC: created.Format(time.RFC3339), ExpiresAtUTC: expires.Format(time.RFC3339)}}
	timeout := d.ReadyTimeout
	if timeout == 0 {
		timeout = 300 * time.Second
	}
	if err := d.poll(ctx, g, "database", w.Name, s.rec.DBURL, timeout, func(ctx context.Context) (bool, string, error) {
		if err := pgserver.Ping(ctx, host); err != nil {
			// A refused login will not heal by waiting: fail now with
			// the database's words instead of at the timeout.
			if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && strings.HasPrefix(pe.Code, "28") {
				return false, "", fmt.Errorf("database %s refuses the session: %w", w.Name, err)
			}
			return false, "not accepting sessions yet: " + err.Error(), nil
		}
		return true, "", nil
	}); err != nil {
		return nil, err
	}
	if req.EnvStateInstanceID != "" {
		if err := d.copyState(ctx, req.EnvStateInstanceID, s.rec.DBURL); err != nil {
			return nil, err
		}
		s.rec.CopiedFrom = req.EnvStateInstanceID
	}
	return s, nil
}

// copyState copies the public schema of a live state instance into the
// database at dst, in one transaction.
func (d *Deployer) copyState(ctx context.Context, id, dst string) error {
	r, _, err := d.record(ctx, registry.EnvStateInstances, id)
	if err != nil {
		return fmt.Errorf("env_state_instance_id %s: %w", id, err)
	}
	var from EnvStateInstance
	if err := r.Decode(&from); err != nil {
		return fmt.Errorf("env_state_instance_id %s: %w", id, err)
	}
	if from.Status != StatusDeployed {
		return &registry.InvalidError{Field: "env_state_instance_id", Value: id, Reason: "is " + from.Status + "; only a running state instance can be copied"}
	}
	sc, err := pgx.Connect(ctx, from.DBURL)
	if err != nil {
		return fmt.Errorf("env_state_instance_id %s: connect: %w", id, err)
	}
	defer sc.Close(context.WithoutCancel(ctx))
	var dump string
	if err := pgx.BeginTxFunc(ctx, sc, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		dump, err = sqldump.Export(ctx, tx)
		return err
	}); err != nil {
		return fmt.Errorf("env_state_instance_id %s: export: %w", id, err)
	}
	dc, err := pgx.Connect(ctx, dst)
	if err != nil {
		return fmt.Errorf("new database: %w", err)
	}
	defer dc.Close(context.WithoutCancel(ctx))
	if err := pgx.BeginFunc(ctx, dc, func(tx pgx.Tx) error {
		return sqldump.Load(ctx, tx.Conn().PgConn(), dump)
	}); err != nil {
		return fmt.Errorf("env_state_instance_id %s: load its data: %w", id, err)
	}
	return nil
}

// record stores the state record.
func (s *stateDB) store(ctx context.Context, docs registry.DocumentStore) error {
	body, _ := json.Marshal(s.rec)
	if _, err := docs.InsertRecord(ctx, registry.EnvStateInstances, s.rec.EnvStateInstanceID, body); err != nil {
		return fmt.Errorf("record env state instance: %w", err)
	}
	return nil
}

// serverEnv is what the db MCP server needs to reach the database.
func (s *stateDB) serverEnv(e *Env) map[string]string {
	return map[string]string{"DATABASE_URL": s.rec.InternalDBURL, "DB_WRITE_ROLES": strings.Join(e.DBWriteRoles, ",")}
}
