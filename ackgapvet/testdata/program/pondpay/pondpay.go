// Package pondpay hands a Watermill message's payment to a pond worker
// pool and returns nil: the router acks before the payment is made (field
// trial, wave 39: software-engineering's payment subscriber). Its twin
// waits for the task.
package pondpay

import (
	"net/http"
	"strings"
	"sync"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/alitto/pond"
	pondv2 "github.com/alitto/pond/v2"
)

// S pays through a gateway in a pool's workers.
type S struct {
	Pool    *pond.WorkerPool
	PoolV2  pondv2.Pool
	Gateway string
}

// Pay submits the payment and returns at once.
func (s *S) Pay(msg *message.Message) error {
	body := string(msg.Payload)
	s.Pool.Submit(func() {
		_, _ = http.Post(s.Gateway, "application/json", strings.NewReader(body))
	})
	return nil
}

// PayWait submits the payment and waits for it.
func (s *S) PayWait(msg *message.Message) error {
	body := string(msg.Payload)
	var wg sync.WaitGroup
	var err error
	wg.Add(1)
	s.Pool.Submit(func() {
		defer wg.Done()
		_, err = http.Post(s.Gateway, "application/json", strings.NewReader(body))
	})
	wg.Wait()
	return err
}

// PayTask submits the payment to a pond v2 pool and waits for its task.
func (s *S) PayTask(msg *message.Message) error {
	body := string(msg.Payload)
	var err error
	if werr := s.PoolV2.Submit(func() {
		_, err = http.Post(s.Gateway, "application/json", strings.NewReader(body))
	}).Wait(); werr != nil {
		return werr
	}
	return err
}

// Register adds the handlers.
func Register(r *message.Router, sub message.Subscriber, s *S) {
	r.AddNoPublisherHandler("pay", "payments", sub, s.Pay)
	r.AddNoPublisherHandler("pay-wait", "payments-wait", sub, s.PayWait)
	r.AddNoPublisherHandler("pay-task", "payments-task", sub, s.PayTask)
	r.AddNoPublisherHandler("pay-via", "payments-via", sub, func(msg *message.Message) error { return s.PayVia(&Payer{Pool: s.Pool, Gateway: s.Gateway}, msg) })
}

// Payer submits a payment to its pool and returns: a call of it hands the
// work off (field trial, wave 42: grogu's Handle).
type Payer struct {
	Pool    *pond.WorkerPool
	Gateway string
}

// Submit hands body to the pool.
func (p *Payer) Submit(body string) {
	p.Pool.Submit(func() {
		_, _ = http.Post(p.Gateway, "application/json", strings.NewReader(body))
	})
}

// PayVia hands the payment to the Payer and returns nil.
func (s *S) PayVia(p *Payer, msg *message.Message) error {
	p.Submit(string(msg.Payload))
	return nil
}
