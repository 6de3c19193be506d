package ackgap_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoAdapter keeps the core lean (conventions.md, rule 1):
// the router, the middleware, the store contract and this package must not
// pull in a database driver or a broker SDK, so users of one store or
// broker do not compile the others. Package telemetry is held to the same
// rule, and takes the OpenTelemetry API only, never the SDK (rule 22).
func TestCoreImportsNoAdapter(t *testing.T) {
	core := []string{".", "./router", "./middleware", "./stores", "./retention", "./consumertest", "./telemetry", "./batch"}
	forbidden := []string{
		"github.com/jackc/", "modernc.org/sqlite", "github.com/mattn/go-sqlite3",
		"github.com/IBM/sarama", "github.com/twmb/franz-go", "github.com/ThreeDotsLabs/watermill-kafka",
		"github.com/aws/", "github.com/ThreeDotsLabs/watermill-aws", "go.opentelemetry.io/otel/sdk",
	}
	for _, pkg := range core {
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Env = append(os.Environ(), "GOWORK=off") // this module alone, never a go.work above the checkout
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s imports %s (via go list -deps): the core must not depend on an adapter", pkg, dep)
				}
			}
		}
	}
}
