package knownsdk

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/sendgrid/sendgrid-go"
	stripe "github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/charge"
)

type deps struct {
	mail *sendgrid.Client
	ses  *sesv2.Client
}

func register(r *message.Router, d *deps) {
	r.AddNoPublisherHandler("orders", "orders", nil, func(msg *message.Message) error {
		if _, err := charge.Get("ch_1", nil); err != nil { // clean: a read; stripe's own HTTP call is not followed
			return err
		}
		if _, err := charge.New(&stripe.ChargeParams{}); err != nil { // want `critical: a payment call \(charge.New\) on the consumer path of watermill handler \(func literal\) repeats`
			return err
		}
		e := d.mail.NewEmail("a@example.com", "receipt") // clean: builds a value
		if _, err := d.mail.Send(e); err != nil {        // want `high: an email \(sendgrid.Client.Send\) on the consumer path`
			return err
		}
		if _, err := d.ses.GetAccount(context.Background(), &sesv2.GetAccountInput{}); err != nil { // clean: a read
			return err
		}
		_, err := d.ses.SendEmail(msg.Context(), &sesv2.SendEmailInput{}) // want `high: an email \(sesv2.Client.SendEmail\) on the consumer path`
		return err
	})
}

// newClient builds a client: no handler, clean.
func newClient() *sendgrid.Client { return sendgrid.NewSendClient("key") }
