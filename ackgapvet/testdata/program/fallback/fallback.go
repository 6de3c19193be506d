// Package fallback converts each message natively and falls back to a
// converter service when that fails, returning the fallback's error
// (field trial, wave 47: fyredocs' LibreOffice fallback): no failure is
// dropped. The twin logs the first failure and returns nil.
package fallback

import (
	"bytes"
	"log"
	"net/http"

	"github.com/IBM/sarama"
)

// H converts documents.
type H struct{ URL string }

// Setup does nothing.
func (h *H) Setup(sarama.ConsumerGroupSession) error { return nil }

// Cleanup does nothing.
func (h *H) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *H) post(path string, body []byte) error {
	resp, err := http.Post(h.URL+path, "application/pdf", bytes.NewReader(body))
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// convert tries the native converter, then the service.
func (h *H) convert(body []byte) error {
	err := h.post("/native", body)
	if err != nil {
		log.Printf("native: %v", err)
		err = h.post("/office", body)
	}
	if err != nil {
		return err
	}
	return nil
}

// thumbnail logs a failed render and returns nil.
func (h *H) thumbnail(body []byte) error {
	err := h.post("/thumb", body)
	if err != nil {
		log.Printf("thumb: %v", err)
	}
	return nil
}

// ConsumeClaim converts and marks each message.
func (h *H) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		if err := h.convert(m.Value); err != nil {
			return err
		}
		if err := h.thumbnail(m.Value); err != nil {
			return err
		}
		s.MarkMessage(m, "")
	}
	return nil
}

var _ sarama.ConsumerGroupHandler = (*H)(nil)
