package errack

import (
	"bytes"
	"log"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// registerMailtrap posts to a mail API and treats a failed status as done
// (wave 14, fit-forge H3); a conflict means sent before, which is done.
func registerMailtrap(r *message.Router, c *http.Client) {
	r.AddNoPublisherHandler("verify", "users", nil, func(msg *message.Message) error {
		resp, err := c.Post("https://send.api.example/api/send", "application/json", bytes.NewReader(msg.Payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
			log.Printf("mail API answered %d", resp.StatusCode)
			return nil // want `returns without an error when resp.StatusCode shows a failed request \(line \d+\): the watermill handler acks the message, so a 5xx or 429 answer loses it`
		}
		return nil
	})
	r.AddNoPublisherHandler("verify2", "users", nil, func(msg *message.Message) error {
		resp, err := c.Post("https://send.api.example/api/send", "application/json", bytes.NewReader(msg.Payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusConflict {
			return nil // clean: sent before
		}
		if resp.StatusCode >= 300 {
			return errGone
		}
		return nil
	})
}

// registerDrop4xx drops a client error, which will fail again the same
// way: clean.
func registerDrop4xx(r *message.Router, c *http.Client) {
	r.AddNoPublisherHandler("verify3", "users", nil, func(msg *message.Message) error {
		resp, err := c.Post("https://send.api.example/api/send", "application/json", bytes.NewReader(msg.Payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 400 && resp.StatusCode < 500 {
			return nil
		}
		if resp.StatusCode >= 500 {
			return errGone
		}
		return nil
	})
}

// registerRelay logs a failed status and falls through to the nil return
// (wave 24, github-hook-relay H1): the message is acked all the same. Its
// second handler carries the failure on in err: clean.
func registerRelay(r *message.Router, c *http.Client) {
	r.AddNoPublisherHandler("relay", "hooks", nil, func(msg *message.Message) error {
		resp, err := c.Post("https://ci.example/github-webhook/", "application/json", bytes.NewReader(msg.Payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Printf("ci answered %d", resp.StatusCode)
		}
		return nil // want `returns without an error when resp.StatusCode shows a failed request \(line \d+\): the watermill handler acks the message`
	})
	r.AddNoPublisherHandler("relay2", "hooks", nil, func(msg *message.Message) error {
		resp, err := c.Post("https://ci.example/github-webhook/", "application/json", bytes.NewReader(msg.Payload))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Printf("ci answered %d", resp.StatusCode)
			err = errGone
		}
		return err
	})
}
