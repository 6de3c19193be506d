package errack

import (
	"encoding/json"
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
	"gorm.io/gorm"
)

// Orchestrator keeps only the last compensation's error (field trial wave
// 4, saga-product H4).
type Orchestrator struct{ pub message.Publisher }

func (o *Orchestrator) HandleReply(msg *message.Message) error {
	var err error
	if err = o.pub.Publish("rollback_order", &message.Message{UUID: msg.UUID + "-order"}); err != nil { // want `the error of o.pub.Publish \(line 17\) is only logged, then overwritten at line 20`
		log.Println(err)
	}
	if err = o.pub.Publish("rollback_inventory", &message.Message{UUID: msg.UUID + "-inventory"}); err != nil {
		log.Println(err)
	}
	return err
}

// joined keeps both errors: nothing is overwritten.
func (o *Orchestrator) Joined(msg *message.Message) error {
	var errs []error
	if err := o.pub.Publish("rollback_order", &message.Message{UUID: msg.UUID + "-order"}); err != nil {
		errs = append(errs, err)
	}
	err := o.pub.Publish("rollback_inventory", &message.Message{UUID: msg.UUID + "-inventory"})
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// Order is keyed by the purchase id: a redelivery's Create fails on it.
type Order struct{ ID, ProductID uint64 }

// Orders answers a failed Create as a business failure (saga-product H2).
type Orders struct{ db *gorm.DB }

func (h *Orders) CreateOrder(msg *message.Message) ([]*message.Message, error) {
	var o Order
	if err := json.Unmarshal(msg.Payload, &o); err != nil {
		return nil, err
	}
	reply := map[string]interface{}{"purchase": o.ID, "success": true}
	if err := h.db.Create(&o).Error; err != nil { // want `when h.db.Create fails \(line 54\) the error is only recorded and the function goes on to return no error \(line 58\)`
		reply["success"] = false
	}
	payload, _ := json.Marshal(reply)
	return []*message.Message{{Payload: payload}}, nil
}

// Strict returns the failure: redelivered.
func (h *Orders) Strict(msg *message.Message) ([]*message.Message, error) {
	var o Order
	if err := h.db.Create(&o).Error; err != nil {
		return nil, err
	}
	return nil, nil
}

// linkInTx rolls back on a failed write and returns the rollback's result
// (wave 18, vuln4shift-backend H2): nil when the rollback succeeds, so the
// handler acks a message whose write never happened.
func (h *Orders) linkInTx(o *Order) error {
	tx := h.db.Begin()
	if err := tx.Create(o).Error; err != nil {
		return tx.Rollback().Error // want `when tx.Create fails \(line \d+\) the branch returns the result of the rollback instead of the failure`
	}
	return tx.Commit().Error
}

// Linked writes through linkInTx.
func (h *Orders) Linked(msg *message.Message) error {
	var o Order
	if err := json.Unmarshal(msg.Payload, &o); err != nil {
		return err
	}
	return h.linkInTx(&o)
}

func registerOverwrite(r *message.Router, o *Orchestrator, h *Orders) {
	r.AddNoPublisherHandler("linked", "create_order", nil, h.Linked)
	r.AddNoPublisherHandler("reply", "reply", nil, o.HandleReply)
	r.AddNoPublisherHandler("joined", "reply", nil, o.Joined)
	r.AddHandler("create_order", "create_order", nil, "reply", nil, h.CreateOrder)
	r.AddHandler("strict", "create_order", nil, "reply", nil, h.Strict)
}
