// Package gensql is a Watermill handler that writes through sqlc's
// generated queries: the INSERT is in a generated file, so its finding is
// reported at the handler's call (field trial, wave 38: go-shortener H1,
// goctl's generated model).
package gensql

import "github.com/ThreeDotsLabs/watermill/message"

// H records page visits.
type H struct{ Q *Queries }

// Visit appends a visit row per delivery.
func (h *H) Visit(msg *message.Message) error {
	return h.Q.CreateVisit(msg.Context(), string(msg.Payload))
}

// Register adds the handler.
func Register(r *message.Router, sub message.Subscriber, h *H) {
	r.AddNoPublisherHandler("visits", "visits", sub, h.Visit)
}
