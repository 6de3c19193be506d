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
	t.Setenv("GOWORK", "off")
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

// TestLowerFloorsImportNoUpperOnes keeps the import graph layered (issue
// #10): stores and broker adapters import the root package and the store
// contract, never the middleware, the router or package batch, whose
// constants, context keys and errors sit in package ackgap. The conformance
// suites run the whole chain and may import it, but brokertest depends on
// no store (the adapter passes a store factory).
func TestLowerFloorsImportNoUpperOnes(t *testing.T) {
	t.Setenv("GOWORK", "off")
	const mod = "github.com/ackgap/ackgap"
	upper := []string{mod + "/middleware", mod + "/router", mod + "/batch"}
	suites := map[string]bool{mod + "/brokers/brokertest": true, mod + "/stores/storetest": true}
	out, err := exec.Command("go", "list", "./stores/...", "./brokers/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		deps, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, deps)
		}
		for _, dep := range strings.Fields(string(deps)) {
			if !suites[pkg] {
				for _, u := range upper {
					if dep == u {
						t.Errorf("%s imports %s (via go list -deps): stores and brokers must not depend on an upper floor", pkg, dep)
					}
				}
			}
			if pkg == mod+"/brokers/brokertest" && strings.HasPrefix(dep, mod+"/stores/") {
				t.Errorf("%s imports %s: the broker suite must depend on no store", pkg, dep)
			}
		}
	}
}
