// Package logger is an application's own logging package: package-level
// functions named like levels.
package logger

// Error logs msg at error level.
func Error(msg string, args ...any) {}
