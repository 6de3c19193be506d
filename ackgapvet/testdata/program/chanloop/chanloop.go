// Package chanloop ranges over a library subscriber's channel of messages
// that ack themselves with Done (wave 15, gizmo's sqs-sub example).
package chanloop

import (
	"bytes"
	"log"
	"net/http"

	"example.org/subs"
)

// Notify posts each message, and marks it done even when the post failed.
func Notify(sub subs.Subscriber, c *http.Client) {
	for m := range sub.Start() {
		resp, err := c.Post("https://hooks.example/notify", "application/json", bytes.NewReader(m.Message()))
		if err != nil {
			log.Printf("notify: %v", err)
			m.Done()
			continue
		}
		resp.Body.Close()
		m.Done()
	}
}
