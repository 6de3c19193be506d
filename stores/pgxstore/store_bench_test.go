package pgxstore_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ackgap/ackgap/stores/storetest"
)

// BenchmarkStore runs the shared store benchmark on PostgreSQL (a fresh
// schema per sub-benchmark, TEST_DATABASE_URL):
//
//	go test -run x -bench Store ./stores/...
func BenchmarkStore(b *testing.B) {
	storetest.RunBenchmarks(b, func(b *testing.B) *storetest.Harness[pgx.Tx] { return harnessTB(b) })
}
