package sqlitestore_test

import (
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

func TestOperatorConformance(t *testing.T) { storetest.RunOperator(t, harness) }
