// Package keyedpost posts with an Idempotency-Key: from the Watermill
// message's UUID, and from the order the payload names.
package keyedpost

import (
	"net/http"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

// Poster holds the client.
type Poster struct{ C *http.Client }

// ByUUID keys the post on the message's UUID: the same on every
// redelivery of this message.
func (p *Poster) ByUUID(msg *message.Message) error {
	req, err := http.NewRequest(http.MethodPost, "https://shipping.example/labels", strings.NewReader(string(msg.Payload)))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", "label-"+msg.UUID)
	_, err = p.C.Do(req)
	return err
}

// ByOrder keys the post on the order the payload names.
func (p *Poster) ByOrder(msg *message.Message) error {
	req, err := http.NewRequest(http.MethodPost, "https://shipping.example/labels", strings.NewReader(string(msg.Payload)))
	if err != nil {
		return err
	}
	req.Header.Set("Idempotency-Key", orderOf(msg.Payload))
	_, err = p.C.Do(req)
	return err
}

func orderOf(b []byte) string { return string(b) }
