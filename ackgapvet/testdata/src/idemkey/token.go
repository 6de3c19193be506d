package idemkey

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

// registerToken fetches an OAuth 2.0 access token (a POST to the token
// endpoint) before the call: the token request needs no idempotency key.
func registerToken(r *message.Router, client *http.Client, tenant string) {
	r.AddNoPublisherHandler("notify", "orders", nil, func(msg *message.Message) error {
		form := url.Values{"grant_type": {"client_credentials"}}
		endpoint := "https://login.example/" + tenant + "/oauth2/v2.0/token"
		req, err := http.NewRequestWithContext(msg.Context(), http.MethodPost, endpoint, strings.NewReader(form.Encode())) // clean: a token fetch
		if err != nil {
			return err
		}
		_, err = client.Do(req)
		return err
	})
}
