// Package golangci makes ackgapvet a golangci-lint module plugin, so its
// checks run where golangci-lint already runs.
//
// Build a custom golangci-lint with it (.custom-gcl.yml):
//
//	version: v2.5.0
//	plugins:
//	  - module: github.com/ackgap/ackgap
//	    import: github.com/ackgap/ackgap/ackgapvet/golangci
//	    version: v0.3.0
//
// then `golangci-lint custom` and enable it in .golangci.yml:
//
//	version: "2"
//	linters:
//	  enable: [ackgapvet]
//	  settings:
//	    custom:
//	      ackgapvet:
//	        type: module
//	        description: consumers that a duplicate delivery would hurt
//	        settings:
//	          checks: [effect, pooltx, earlyack]      # default: all
//	          severity: "critical=charge|payout"      # default: ackgapvet.DefaultSeverityPatterns
package golangci

import (
	"fmt"

	"github.com/golangci/plugin-module-register/register"
	"golang.org/x/tools/go/analysis"

	"github.com/ackgap/ackgap/ackgapvet"
)

// Name is the linter's name in golangci-lint's configuration.
const Name = "ackgapvet"

func init() { register.Plugin(Name, New) }

// Settings are the plugin's settings in .golangci.yml. Unknown fields are an
// error.
type Settings struct {
	// Checks names the checks to run, or "all". Default: ackgapvet.Analyzers
	// less ackgapvet.OptIn (see ackgapvet.Select).
	Checks []string `json:"checks"`
	// Severity overrides blast-radius patterns, in the form of
	// ackgapvet.SetSeverityPatterns. Default: "" (the defaults). It applies
	// to the whole process.
	Severity string `json:"severity"`
}

type plugin struct {
	analyzers []*analysis.Analyzer
}

var _ register.LinterPlugin = (*plugin)(nil)

// New builds the plugin from golangci-lint's raw settings. It returns an
// error naming an unknown field, an unknown check or a bad severity pattern.
func New(raw any) (register.LinterPlugin, error) {
	s, err := register.DecodeSettings[Settings](raw)
	if err != nil {
		return nil, fmt.Errorf("ackgapvet settings: %w", err)
	}
	analyzers, err := ackgapvet.Select(s.Checks)
	if err != nil {
		return nil, fmt.Errorf("ackgapvet settings: checks: %w", err)
	}
	if s.Severity != "" {
		if err := ackgapvet.SetSeverityPatterns(s.Severity); err != nil {
			return nil, fmt.Errorf("ackgapvet settings: %w", err)
		}
	}
	return &plugin{analyzers: analyzers}, nil
}

// BuildAnalyzers returns the selected checks.
func (p *plugin) BuildAnalyzers() ([]*analysis.Analyzer, error) { return p.analyzers, nil }

// GetLoadMode asks for type information: the checks resolve callees and use
// facts across packages.
func (p *plugin) GetLoadMode() string { return register.LoadModeTypesInfo }
