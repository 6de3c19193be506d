package knownsdk

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/resendlabs/resend-go"
)

// welcome mails through Resend's SDK under its former path (wave 21,
// base-server's internal/clients/mail).
func welcome(r *message.Router, c *resend.Client) {
	r.AddNoPublisherHandler("welcome", "users", nil, func(msg *message.Message) error {
		_, err := c.Emails.Send(&resend.SendEmailRequest{To: []string{string(msg.Payload)}}) // want `high: an email \(resend.EmailsSvc.Send\) on the consumer path`
		return err
	})
}
