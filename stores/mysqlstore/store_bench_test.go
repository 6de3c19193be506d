package mysqlstore_test

import (
	"database/sql"
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

// BenchmarkStore runs the shared store benchmark on MariaDB (a fresh
// database per sub-benchmark on TEST_MYSQL_DSN's server):
//
//	go test -run x -bench Store ./stores/mysqlstore
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) *storetest.Harness[*sql.Tx] { return harnessTB(b) })
}
