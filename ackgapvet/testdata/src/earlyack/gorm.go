package earlyack

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"gorm.io/gorm"
)

type order struct{ ID string }

func registerGorm(r *message.Router, db *gorm.DB) {
	r.AddNoPublisherHandler("orders-gorm", "orders", nil, func(msg *message.Message) error {
		msg.Ack() // want `acks with message.Message.Ack before the work \(a database write \(gorm.DB.Create\) at line \d+\)`
		return db.WithContext(msg.Context()).Create(&order{ID: msg.UUID}).Error
	})
}
