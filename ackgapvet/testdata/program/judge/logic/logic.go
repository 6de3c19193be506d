// Package logic runs a submission in the sandbox and reports a verdict.
package logic

import (
	"context"
	"net/http"
	"strings"
)

// Judge calls the sandbox.
type Judge struct{ C *http.Client }

// New returns a Judge.
func New() *Judge { return &Judge{C: http.DefaultClient} }

// Verdict is the judge's answer.
type Verdict struct{ Code int }

// Run turns every failure into a verdict code with a nil error.
func (j *Judge) Run(ctx context.Context, code string) (Verdict, error) {
	resp, err := j.C.Post("https://sandbox.example/run", "text/plain", strings.NewReader(code))
	if err != nil {
		return Verdict{Code: 500}, nil
	}
	defer resp.Body.Close()
	return Verdict{Code: resp.StatusCode}, nil
}
