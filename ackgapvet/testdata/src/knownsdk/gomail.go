package knownsdk

import (
	"github.com/ThreeDotsLabs/watermill/message"
	"gopkg.in/gomail.v2"
)

// registerMail sends a welcome mail with gomail (wave 14, taskcrud's
// e-mail service): the send is an effect, building and dialing are not.
func registerMail(r *message.Router, d *gomail.Dialer) {
	r.AddNoPublisherHandler("welcome", "users", nil, func(msg *message.Message) error {
		m := gomail.NewMessage()
		m.SetHeader("To", string(msg.Payload))
		if _, err := d.Dial(); err != nil { // clean: opens a connection
			return err
		}
		return d.DialAndSend(m) // want `high: an email \(gomail.Dialer.DialAndSend\) on the consumer path`
	})
}
