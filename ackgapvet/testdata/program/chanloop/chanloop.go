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

// NotifyLogged logs a failed post and marks the message done through a
// helper of its own (wave 17, flyte's markMessageDone).
func NotifyLogged(sub subs.Subscriber, c *http.Client) {
	for m := range sub.Start() {
		resp, err := c.Post("https://hooks.example/notify", "application/json", bytes.NewReader(m.Message()))
		if err != nil {
			log.Printf("notify: %v", err)
		} else {
			_ = resp.Body.Close()
		}
		markDone(m)
	}
}

func markDone(m subs.SubscriberMessage) {
	if err := m.Done(); err != nil {
		log.Printf("done: %v", err)
	}
}
