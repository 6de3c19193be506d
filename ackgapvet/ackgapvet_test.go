package ackgapvet_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/ackgap/ackgap/ackgapvet"
)

func TestEffect(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EffectAnalyzer, "effect")
}

func TestPoolTx(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), ackgapvet.PoolTxAnalyzer, "pooltx")
}

func TestEarlyAck(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.EarlyAckAnalyzer, "earlyack")
}

func TestAutoCommit(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.AutoCommitAnalyzer, "autocommit", "autocommitok")
}

func TestCheckAct(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.CheckActAnalyzer, "checkact", "checkactok")
}

func TestIdemKey(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.IdemKeyAnalyzer, "idemkey")
}

func TestTransition(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.TransitionAnalyzer, "transition")
}

func TestHTTPClient(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.HTTPClientAnalyzer, "httpclient")
}

func TestBgContext(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), ackgapvet.ContextAnalyzer, "bgcontext")
}

func TestSleep(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.SleepAnalyzer, "sleep", "sleepwrapped")
}

func TestVisibility(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.VisibilityAnalyzer, "visibility")
}

func TestLambdaBatch(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), ackgapvet.LambdaBatchAnalyzer, "lambdabatch")
}

func TestSeverityPatterns(t *testing.T) {
	require.Equal(t, ackgapvet.SeverityCritical, ackgapvet.SeverityOf("handle", "chargeCard"))
	require.Equal(t, ackgapvet.SeverityHigh, ackgapvet.SeverityOf("sendEmail"))
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("refreshCache"))
	require.Equal(t, ackgapvet.SeverityMedium, ackgapvet.SeverityOf("handle"))

	require.ErrorContains(t, ackgapvet.SetSeverityPatterns("urgent=x"), "want <critical|high|medium|low>=<regexp>")
	require.ErrorContains(t, ackgapvet.SetSeverityPatterns("low=("), "low:")
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("refreshCache"), "a bad spec changes nothing")

	require.NoError(t, ackgapvet.SetSeverityPatterns("critical=cache;low=charge"))
	t.Cleanup(func() { require.NoError(t, ackgapvet.SetSeverityPatterns("")) })
	require.Equal(t, ackgapvet.SeverityCritical, ackgapvet.SeverityOf("refreshCache"))
	require.Equal(t, ackgapvet.SeverityLow, ackgapvet.SeverityOf("chargeCard"))
}

func TestAnalyzersValid(t *testing.T) {
	seen := map[string]bool{}
	for _, a := range ackgapvet.Analyzers() {
		require.NotEmpty(t, a.Doc, a.Name)
		require.False(t, seen[a.Name], "duplicate name %s", a.Name)
		seen[a.Name] = true
	}
}
