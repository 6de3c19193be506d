// Package metrics stands for an instrumentation package: a collector
// behind an interface.
package metrics

// Collector records samples.
type Collector interface {
	Inc(name string) error
}

// Glob is the process's collector.
var Glob Collector
