// Package kqapp is a go-zero service's Kafka consumer: go-queue's kq calls
// the handler's Consume method for every message.
package kqapp

import (
	"context"
	"net/http"

	"github.com/zeromicro/go-queue/kq"
)

type PaymentUpdateMq struct{ client *http.Client }

func (m *PaymentUpdateMq) Consume(ctx context.Context, key, value string) error {
	_, err := http.Post("http://orders.local/paid", "text/plain", nil) // want `an HTTP request \(http.Post\) .*repeats on every redelivery`
	return err
}

// notAHandler has a Consume method but is never given to kq.
type notAHandler struct{}

func (notAHandler) Consume(ctx context.Context, key, value string) error {
	_, err := http.Post("http://orders.local/other", "text/plain", nil)
	return err
}

func Start(c kq.KqConf) kq.MessageQueue {
	return kq.MustNewQueue(c, &PaymentUpdateMq{client: http.DefaultClient})
}

// ChatLogMq is made by a constructor that returns the interface (field
// trial wave 14, Go-zero-IM): its Consume is the handler all the same.
type ChatLogMq struct{}

func (m *ChatLogMq) Consume(ctx context.Context, key, value string) error {
	_, err := http.Post("http://im.local/push", "text/plain", nil) // want `an HTTP request \(http.Post\) .*repeats on every redelivery`
	return err
}

// NewChatLogMq returns the handler as kq.ConsumeHandler.
func NewChatLogMq() kq.ConsumeHandler { return &ChatLogMq{} }

func StartChat(c kq.KqConf) kq.MessageQueue {
	return kq.MustNewQueue(c, NewChatLogMq())
}
