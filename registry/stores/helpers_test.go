package stores_test

import (
	"strings"
	"testing"

	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/agentenv/agentenv/registry/artifact"
)

func artifactInput(s string) artifact.FileInput {
	return artifact.FileInput{Filename: "hello.txt", Body: strings.NewReader(s)}
}

func dropSchema(t *testing.T, dsn, schema string) {
	db, err := gorm.Open(pgdriver.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	if err != nil {
		t.Errorf("drop schema: %v", err)
		return
	}
	if err := db.Exec("DROP SCHEMA " + schema + " CASCADE").Error; err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
	if sqlDB, err := db.DB(); err == nil {
		sqlDB.Close()
	}
}
