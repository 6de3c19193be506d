package idemkey

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"gorm.io/gorm"
)

// GORM's other writes (a new user's report): a value read, changed in Go
// and written back with Update or Updates, and a counter kept with
// gorm.Expr or Exec, are reported like their SQL forms.
func registerGormWrites(r *message.Router, g *gorm.DB) {
	r.AddNoPublisherHandler("gorm-update", "wallet", nil, func(msg *message.Message) error {
		var acct Account
		if err := g.First(&acct, "id = ?", msg.UUID).Error; err != nil {
			return err
		}
		acct.Balance += 100
		return g.Model(&acct).Update("balance", acct.Balance).Error // want `writes back acct, read from the database`
	})
	r.AddNoPublisherHandler("gorm-updates", "wallet", nil, func(msg *message.Message) error {
		var acct Account
		if err := g.First(&acct, "id = ?", msg.UUID).Error; err != nil {
			return err
		}
		return g.Model(&acct).Updates(map[string]any{"balance": acct.Balance + 100}).Error // want `writes back acct, read from the database`
	})
	r.AddNoPublisherHandler("gorm-expr", "views", nil, func(msg *message.Message) error {
		return g.Model(&Account{}).Where("id = ?", msg.UUID).UpdateColumn("balance", gorm.Expr("balance + ?", 1)).Error // want `increments balance with no dedupe record`
	})
	r.AddNoPublisherHandler("gorm-exec", "views", nil, func(msg *message.Message) error {
		return g.Exec("UPDATE accounts SET balance = balance + 1 WHERE id = ?", msg.UUID).Error // want `increments balance with no dedupe record`
	})
}
