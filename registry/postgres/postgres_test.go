package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentenv/agentenv/registry"
	"github.com/agentenv/agentenv/registry/postgres"
	"github.com/agentenv/agentenv/registry/storetest"
)

// dsn returns the test server's DSN. Without one the tests skip locally and
// fail in CI, where .ci/postgres.sh always provides a server.
func dsn(t *testing.T) string {
	t.Helper()
	d := os.Getenv("AGENTENV_TEST_POSTGRES_DSN")
	if d == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("AGENTENV_TEST_POSTGRES_DSN is unset but CI=true: the PostgreSQL conformance suite must run in CI (see .ci/postgres.sh)")
		}
		t.Skip("AGENTENV_TEST_POSTGRES_DSN unset; run with: source .ci/postgres.sh && start_postgres")
	}
	return d
}

// fresh opens a store in a new schema dropped when the test ends, so
// reruns start clean.
func fresh(t *testing.T) *postgres.Store {
	t.Helper()
	d := dsn(t)
	schema := "agentenv_test_" + registry.RandomSuffix(10)
	s, err := postgres.Open(context.Background(), d, &postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		dropSchema(t, d, schema)
	})
	return s
}

func dropSchema(t *testing.T, d, schema string) {
	admin, err := gorm.Open(pgdriver.Open(d), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
		return
	}
	if err := admin.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE").Error; err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
	if db, err := admin.DB(); err == nil {
		_ = db.Close()
	}
}

func TestConformance(t *testing.T) {
	dsn(t)
	storetest.RunDocumentStore(t, func(t *testing.T) registry.DocumentStore { return fresh(t) })
}

// The raw rows never hold a secret.
func TestSecretsNotInRows(t *testing.T) {
	d := dsn(t)
	s := fresh(t)
	ctx := context.Background()
	body := `{"metadata":{"user_overrides":{"litellm_api_key":"` + storetest.SecretValue + `"}},"marker":"visible-marker-7731"}`
	if _, err := s.InsertRecord(ctx, registry.TaskInstances, "t-12345678", json.RawMessage(`{"context":`+body+`}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, registry.Tasks, "t", json.RawMessage(body), nil); err != nil {
		t.Fatal(err)
	}
	_ = d
	// Read the raw columns through the store's own schema.
	var docs []string
	if err := rawDB(t, s).Raw("SELECT doc FROM docs_task_instances UNION ALL SELECT doc FROM docs_tasks").Scan(&docs).Error; err != nil {
		t.Fatal(err)
	}
	all := strings.Join(docs, "\n")
	if !strings.Contains(all, "visible-marker-7731") {
		t.Fatalf("raw rows lack the marker: %s", all)
	}
	if strings.Contains(all, storetest.SecretValue) {
		t.Fatal("secret value found in PostgreSQL rows")
	}
}

// A server that is down is an ErrUnavailable error naming it, without the
// password.
func TestServerDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	_ = ln.Close()
	down := "host=127.0.0.1 port=" + itoa(addr.Port) + " user=u password=hunter2 dbname=agentenv sslmode=disable connect_timeout=5"
	_, err = postgres.Open(context.Background(), down, nil)
	if !errors.Is(err, registry.ErrUnavailable) {
		t.Fatalf("Open on a closed port: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:"+itoa(addr.Port)) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("message should name the server and hide the password: %v", err)
	}
	if _, err := postgres.Open(context.Background(), down, &postgres.Options{Schema: "Bad-Name"}); !errors.Is(err, registry.ErrInvalid) {
		t.Fatalf("bad schema name: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func rawDB(t *testing.T, s *postgres.Store) *gorm.DB { t.Helper(); return s.DB() }

func BenchmarkPostgres(b *testing.B) {
	d := os.Getenv("AGENTENV_TEST_POSTGRES_DSN")
	if d == "" {
		b.Skip("AGENTENV_TEST_POSTGRES_DSN unset")
	}
	schema := "agentenv_bench_" + registry.RandomSuffix(8)
	s, err := postgres.Open(context.Background(), d, &postgres.Options{Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		s.Close()
		admin, err := gorm.Open(pgdriver.Open(d), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
		if err == nil {
			admin.Exec("DROP SCHEMA " + schema + " CASCADE")
			if db, err := admin.DB(); err == nil {
				db.Close()
			}
		}
	}()
	storetest.BenchmarkDocuments(b, s)
}
