package errack

import (
	"database/sql"
	"log"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Registry writes through a statement prepared once (field trial wave 4,
// cloud-connector): its Exec is a database write.
type Registry struct{ upsert *sql.Stmt }

func (g *Registry) Register(msg *message.Message) error {
	if _, err := g.upsert.Exec(msg.UUID); err != nil {
		log.Println(err)
		return nil // want `returns without an error when g.upsert.Exec fails`
	}
	return nil
}

func registerPrepared(r *message.Router, g *Registry) {
	r.AddNoPublisherHandler("register", "connections", nil, g.Register)
}
