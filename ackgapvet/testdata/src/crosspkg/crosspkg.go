package crosspkg

import (
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"

	"example.com/ackfirst"
	"example.com/handlers"
)

func register(r *message.Router, o *ackfirst.Orders, client *http.Client) {
	r.AddNoPublisherHandler("orders", "orders", nil, o.Handle)
	r.AddHandler("forward", "orders", nil, "out", nil, handlers.Forward)
	r.AddNoPublisherHandler("refund", "refunds", nil, handlers.NewRefund(client))
}
