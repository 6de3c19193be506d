// Package orders declares a Watermill handler that another package
// registers (the layout of examples/billing/orders).
package orders

import (
	"net/http"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Handle acks before its work and posts with the default client.
func Handle(msg *message.Message) error {
	msg.Ack()
	_, err := http.Post("https://ledger.example/entries", "application/json", strings.NewReader(msg.UUID))
	return err
}
