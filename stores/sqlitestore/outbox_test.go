package sqlitestore_test

import (
	"testing"

	"github.com/ackgap/ackgap/stores/storetest"
)

func TestOutboxConformance(t *testing.T) { storetest.RunOutbox(t, harness) }
