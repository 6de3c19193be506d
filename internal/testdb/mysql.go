package testdb

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// MySQLDSNDefault is the MariaDB/MySQL server tests use when
// TEST_MYSQL_DSN is unset (the driver's DSN form).
const MySQLDSNDefault = "root@tcp(127.0.0.1:3306)/test"

// MySQLDSN returns TEST_MYSQL_DSN or MySQLDSNDefault.
func MySQLDSN() string {
	if u := os.Getenv("TEST_MYSQL_DSN"); u != "" {
		return u
	}
	return MySQLDSNDefault
}

// MySQLDatabase creates a database ackgap_t_<random> on the server of
// MySQLDSN, drops it when t ends, and returns the driver DSN that names
// it. A server that cannot be reached fails the test: the suite needs a
// real MariaDB.
func MySQLDatabase(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(MySQLDSN())
	if err != nil {
		t.Fatalf("testdb: TEST_MYSQL_DSN: %v", err)
	}
	name := "ackgap_t_" + randomHex(8)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("testdb: %v", err)
	}
	defer admin.Close()
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE `"+name+"`"); err != nil {
		t.Fatalf("testdb: create database on %s: %v (start MariaDB or set TEST_MYSQL_DSN)", cfg.Addr, err)
	}
	t.Cleanup(func() {
		c, err := sql.Open("mysql", cfg.FormatDSN())
		if err != nil {
			t.Errorf("testdb: drop database %s: %v", name, err)
			return
		}
		defer c.Close()
		if _, err := c.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("testdb: drop database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
