package sqlitestore_test

import (
	"database/sql"
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

// BenchmarkStore runs the shared store benchmark on SQLite (a fresh file
// per sub-benchmark, sqlitestore.Open's defaults):
//
//	go test -run x -bench Store ./stores/...
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) *storetest.Harness[*sql.Tx] { return harnessTB(b) })
}
