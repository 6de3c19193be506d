package sqlitestore_test

import (
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

func TestBatchConformance(t *testing.T) { storetest.RunBatch(t, harness) }
