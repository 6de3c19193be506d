package telemetry_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOneSemconvVersion: the package and its tests import one semconv
// version (conventions.md, rule 23). (The OpenTelemetry API itself uses
// an older one internally, in go.opentelemetry.io/auto/sdk; that is not
// ours to pin.)
func TestOneSemconvVersion(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, ".")
	cmd.Env = append(os.Environ(), "GOWORK=off") // this module alone, never a go.work above the checkout
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	versions := map[string]bool{}
	for _, imp := range strings.Fields(string(out)) {
		if strings.HasPrefix(imp, "go.opentelemetry.io/otel/semconv/") {
			versions[imp] = true
		}
	}
	if len(versions) != 1 || !versions["go.opentelemetry.io/otel/semconv/v1.41.0"] {
		t.Fatalf("semconv imports %v, want only go.opentelemetry.io/otel/semconv/v1.41.0", versions)
	}
}
