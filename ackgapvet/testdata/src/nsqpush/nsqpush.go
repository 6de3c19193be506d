// Package nsqpush has a go-nsq handler type (field trial, wave 53: goim's
// persist consumer): its HandleMessage, given to AddConcurrentHandlers, is
// an entry point.
package nsqpush

import (
	"bytes"
	"net/http"

	"github.com/nsqio/go-nsq"
)

func run() {
	p, _ := nsq.NewConsumer("persist", "job", nsq.NewConfig())
	p.AddConcurrentHandlers(&pusher{url: "https://push.example/send"}, 4)
}

type pusher struct{ url string }

// HandleMessage posts the message and returns the post's error: go-nsq
// requeues it.
func (p *pusher) HandleMessage(m *nsq.Message) error {
	resp, err := http.Post(p.url, "application/json", bytes.NewReader(m.Body)) // want `an HTTP request \(http.Post\) on the consumer path of go-nsq handler pusher.HandleMessage repeats on every redelivery`
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
