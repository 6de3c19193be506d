package golangci_test

import (
	"testing"

	"github.com/golangci/plugin-module-register/register"
	"github.com/stretchr/testify/require"

	"github.com/ackgap/ackgap/ackgapvet"
	"github.com/ackgap/ackgap/ackgapvet/golangci"
)

func TestPlugin(t *testing.T) {
	newPlugin, err := register.GetPlugin(golangci.Name)
	require.NoError(t, err, "registered by init")

	p, err := newPlugin(map[string]any{})
	require.NoError(t, err)
	def, err := p.BuildAnalyzers()
	require.NoError(t, err)
	want, err := ackgapvet.Select(nil)
	require.NoError(t, err)
	require.Equal(t, want, def)
	require.Less(t, len(def), len(ackgapvet.Analyzers()), "the opt-in checks are off by default")
	for _, a := range def {
		require.Empty(t, ackgapvet.OptIn[a.Name], "opt-in check %s runs by default", a.Name)
	}

	p, err = newPlugin(map[string]any{"checks": []string{"all"}})
	require.NoError(t, err)
	all, err := p.BuildAnalyzers()
	require.NoError(t, err)
	require.Equal(t, ackgapvet.Analyzers(), all)
	require.Equal(t, register.LoadModeTypesInfo, p.GetLoadMode())

	p, err = newPlugin(map[string]any{"checks": []string{"effect", "earlyack"}})
	require.NoError(t, err)
	some, err := p.BuildAnalyzers()
	require.NoError(t, err)
	require.Equal(t, []string{"effect", "earlyack"}, []string{some[0].Name, some[1].Name})
	require.Len(t, some, 2)
}

func TestPluginBadSettings(t *testing.T) {
	_, err := golangci.New(map[string]any{"chekcs": []string{"effect"}})
	require.ErrorContains(t, err, `unknown field "chekcs"`)
	_, err = golangci.New(map[string]any{"checks": []string{"effect", "nosuch"}})
	require.ErrorContains(t, err, `unknown check "nosuch"`)
	_, err = golangci.New(map[string]any{"severity": "urgent=x"})
	require.ErrorContains(t, err, "want <critical|high|medium|low>=<regexp>")
}
