package ackgapvet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/ackgap/ackgap/ackgapvet"
)

func TestEffect(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "effect")
}

func TestPoolTx(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), ackgapvet.PoolTxAnalyzer, "pooltx")
}
