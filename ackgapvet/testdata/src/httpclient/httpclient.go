package httpclient

import (
	"context"
	"net/http"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
)

var (
	bare  = &http.Client{}                         // want `medium: http.Client without Timeout in a package with consumers`
	timed = &http.Client{Timeout: 5 * time.Second} // clean
)

func register(r *message.Router) {
	r.AddNoPublisherHandler("notify", "orders", nil, func(msg *message.Message) error {
		_, err := http.Post("https://sms.example/send", "text/plain", nil) // want `high: http.Post uses http.DefaultClient, which has no timeout, on the consumer path`
		if err != nil {
			return err
		}
		req, _ := http.NewRequest(http.MethodGet, "https://example.com", nil)
		_, err = http.DefaultClient.Do(req) // want `medium: http.DefaultClient, which has no timeout, on the consumer path`
		if err != nil {
			return err
		}
		_, err = timed.Do(req) // clean
		if err != nil {
			return err
		}
		return bounded(msg)
	})
}

// bounded sends through http.DefaultClient with a context deadline made
// here: clean.
func bounded(msg *message.Message) error {
	ctx, cancel := context.WithTimeout(msg.Context(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://example.com", nil)
	_, err := http.DefaultClient.Do(req)
	return err
}

// health is not a consumer: clean.
func health() error {
	_, err := http.Get("http://localhost/health")
	return err
}
