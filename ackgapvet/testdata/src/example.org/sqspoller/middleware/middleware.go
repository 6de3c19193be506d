// Package middleware decorates handlers of sqspoller.
package middleware

import sqspoller "example.org/sqspoller"

// Apply wraps h.
func Apply(h sqspoller.HandlerFunc, _ ...func(sqspoller.HandlerFunc) sqspoller.HandlerFunc) sqspoller.HandlerFunc {
	return h
}
