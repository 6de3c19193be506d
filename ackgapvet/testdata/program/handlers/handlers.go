// Package handlers builds handlers with factories and reaches effects
// through an interface, a function field, a goroutine and a channel.
package handlers

import (
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"

	"example.com/program/notify"
)

// Service holds what the handlers call through.
type Service struct {
	N    notify.Notifier
	Hook notify.Hook
	Jobs chan Job
	C    *http.Client
}

// Job is work handed to a worker goroutine.
type Job struct {
	ID  string
	Ctx context.Context
}

// NotifyHandler is a factory: the handler it returns calls an interface.
func NotifyHandler(s *Service) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		return s.N.Notify(msg.Context(), msg.UUID)
	}
}

// HookHandler is a factory whose handler calls a function field.
func HookHandler(s *Service) message.NoPublishHandlerFunc {
	return func(msg *message.Message) error {
		return s.Hook.Send(msg.Context(), msg.UUID)
	}
}

// AsyncHandler hands the work to a goroutine and to a worker over a channel.
func (s *Service) AsyncHandler(msg *message.Message) error {
	go s.refund(msg.UUID)
	s.Jobs <- Job{ID: msg.UUID, Ctx: msg.Context()}
	return nil
}

func (s *Service) refund(id string) {
	req, _ := http.NewRequest(http.MethodPost, "https://payments.example/refund/"+id, nil)
	_, _ = s.C.Do(req)
}

// Worker receives jobs; it is started by main, not by the handler.
func Worker(c *http.Client, jobs <-chan Job) {
	for j := range jobs {
		req, _ := http.NewRequestWithContext(j.Ctx, http.MethodPost, "https://sms.example/send/"+j.ID, nil)
		_, _ = c.Do(req)
	}
}
