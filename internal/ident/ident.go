// Package ident checks and quotes SQL identifiers. It is the one copy of
// the rule that package stores (parameter validation) and package
// storekit (store authors) share.
package ident

import (
	"fmt"
	"strings"
)

// Quote quotes name as an SQL identifier in the standard way (ISO/IEC
// 9075, used by PostgreSQL and SQLite): wrapped in double quotes, with
// each double quote doubled.
func Quote(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Valid returns an error naming what if name is empty, longer than 63
// bytes (PostgreSQL's NAMEDATALEN-1) or holds a NUL byte.
func Valid(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", what)
	case len(name) > 63:
		return fmt.Errorf("%s %q is longer than 63 bytes", what, name)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("%s holds a NUL byte", what)
	}
	return nil
}
