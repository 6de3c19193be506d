// Package pubsubcb has Google Pub/Sub Receive callbacks: one acks before
// its work (field trial, wave 38: cdnjs/tools' r2-pump), one after it.
package pubsubcb

import (
	"bytes"
	"context"
	"log"
	"net/http"

	"cloud.google.com/go/pubsub"

	"example.com/program/pubsubcb/adapter"
)

// Pump acks each message, then posts it: a failed post is lost.
func Pump(ctx context.Context, sub *pubsub.Subscription, c *http.Client) error {
	return sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		m.Ack()
		resp, err := c.Post("https://pump.example/files", "application/json", bytes.NewReader(m.Data))
		if err != nil {
			log.Printf("pump: %v", err)
			return
		}
		resp.Body.Close()
	})
}

// PumpAfter posts each message and acks it only when the post succeeded.
func PumpAfter(ctx context.Context, sub *pubsub.Subscription, c *http.Client) error {
	return sub.Receive(ctx, func(ctx context.Context, m *pubsub.Message) {
		resp, err := c.Post("https://pump.example/files", "application/json", bytes.NewReader(m.Data))
		if err != nil {
			m.Nack()
			return
		}
		if resp.StatusCode >= 300 {
			resp.Body.Close()
			m.Nack()
			return
		}
		resp.Body.Close()
		m.Ack()
	})
}

// PumpHeld holds its callback in a local variable before Receive gets it
// (field trial, wave 51: go-gcp-doc-ai's Start): the function literal is
// the entry point all the same, and its Ack before the post is reported.
func PumpHeld(ctx context.Context, sub *pubsub.Subscription, c *http.Client) error {
	h := func(ctx context.Context, m *pubsub.Message) {
		m.Ack()
		resp, err := c.Post("https://pump.example/held", "application/json", bytes.NewReader(m.Data))
		if err != nil {
			log.Printf("pump held: %v", err)
			return
		}
		resp.Body.Close()
	}
	for {
		if err := sub.Receive(ctx, h); err != nil {
			log.Printf("receive: %v", err)
			return err
		}
	}
}

// route pairs a subscription with its callback, as an application's handler
// list does.
type route struct {
	Name    string
	Sub     *pubsub.Subscription
	Handler func(context.Context, *pubsub.Message)
}

// PumpRoutes passes each route's Handler field to Receive (field trial,
// wave 58: gqueue's handler list): the functions stored in that field are
// the entry points, and the one that acks before its post is reported.
func PumpRoutes(ctx context.Context, sub *pubsub.Subscription, c *http.Client) {
	routes := []route{
		{Name: "pump-routed", Sub: sub, Handler: func(ctx context.Context, m *pubsub.Message) {
			m.Ack()
			resp, err := c.Post("https://pump.example/routed", "application/json", bytes.NewReader(m.Data))
			if err != nil {
				log.Printf("pump routed: %v", err)
				return
			}
			resp.Body.Close()
		}},
	}
	for _, r := range routes {
		go func() {
			if err := r.Sub.Receive(ctx, r.Handler); err != nil {
				log.Printf("receive %s: %v", r.Name, err)
			}
		}()
	}
}

// PumpAdapted passes the Handler field of handles another package built
// (adapter.Webhook.ToHandle's literal): the whole-program mode finds the
// functions stored in that field there.
func PumpAdapted(ctx context.Context, sub *pubsub.Subscription, w adapter.Webhook) {
	for _, h := range []adapter.Handle{w.ToHandle()} {
		if err := sub.Receive(ctx, h.Handler); err != nil {
			log.Printf("receive %s: %v", h.Name, err)
		}
	}
}
