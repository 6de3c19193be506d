package ackgapvet

import (
	"encoding/json"
	"fmt"
	"io"
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
// {"findings": [...], "skipped": [...], "consumers": [...]}; findings is
// [] (never null) when there are none.
func WriteJSON(w io.Writer, rep *Report) error {
	if rep.Findings == nil {
		cp := *rep
		cp.Findings = []Finding{}
		rep = &cp
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
