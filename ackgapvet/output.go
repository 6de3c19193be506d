package ackgapvet

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteText writes findings in go vet's form, one a line:
// file:line:col: severity: message [check].
func WriteText(w io.Writer, rep *Report) error {
	for _, f := range rep.Findings {
		if _, err := fmt.Fprintf(w, "%s:%d:%d: %s: %s [%s]\n", f.File, f.Line, f.Column, f.Severity, f.Message, f.Check); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes the report as one indented JSON object
// {"findings": [...], "skipped": [...]}.
func WriteJSON(w io.Writer, rep *Report) error {
	if rep.Findings == nil {
		rep = &Report{Findings: []Finding{}, Skipped: rep.Skipped}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// SARIFLevel maps a severity to a SARIF result level: critical and high are
// "error", medium "warning", low "note".
func SARIFLevel(s Severity) string {
	switch s {
	case SeverityCritical, SeverityHigh:
		return "error"
	case SeverityLow:
		return "note"
	}
	return "warning"
}

// WriteSARIF writes the report as a SARIF 2.1.0 log with one run, a rule per
// check (its Doc as description) and a result per finding, for code-scanning
// UIs. Paths are as in the findings (relative to the working directory when
// below it).
func WriteSARIF(w io.Writer, rep *Report) error {
	type text struct {
		Text string `json:"text"`
	}
	type rule struct {
		ID               string `json:"id"`
		ShortDescription text   `json:"shortDescription"`
		FullDescription  text   `json:"fullDescription"`
		HelpURI          string `json:"helpUri,omitempty"`
	}
	type region struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine,omitempty"`
		EndColumn   int `json:"endColumn,omitempty"`
	}
	type location struct {
		PhysicalLocation struct {
			ArtifactLocation struct {
				URI string `json:"uri"`
			} `json:"artifactLocation"`
			Region region `json:"region"`
		} `json:"physicalLocation"`
	}
	type result struct {
		RuleID     string            `json:"ruleId"`
		Level      string            `json:"level"`
		Message    text              `json:"message"`
		Locations  []location        `json:"locations"`
		Properties map[string]string `json:"properties"`
	}
	var rules []rule
	for _, a := range Analyzers() {
		short, _, _ := strings.Cut(a.Doc, "\n")
		rules = append(rules, rule{ID: a.Name, ShortDescription: text{short}, FullDescription: text{a.Doc}, HelpURI: a.URL})
	}
	results := []result{}
	for _, f := range rep.Findings {
		var loc location
		loc.PhysicalLocation.ArtifactLocation.URI = f.File
		loc.PhysicalLocation.Region = region{f.Line, f.Column, f.EndLine, f.EndColumn}
		results = append(results, result{
			RuleID: f.Check, Level: SARIFLevel(f.Severity), Message: text{f.Message},
			Locations: []location{loc}, Properties: map[string]string{"severity": string(f.Severity)},
		})
	}
	log := map[string]any{
		"$schema": "https://json.schemastore.org/sarif-2.1.0.json",
		"version": "2.1.0",
		"runs": []any{map[string]any{
			"tool": map[string]any{"driver": map[string]any{
				"name":           "ackgapvet",
				"informationUri": "https://github.com/ackgap/ackgap/tree/main/ackgapvet",
				"rules":          rules,
			}},
			"results": results,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}
