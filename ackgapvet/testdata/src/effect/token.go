package effect

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ThreeDotsLabs/watermill/message"
)

type notifier struct {
	client   *http.Client
	aadBase  string
	tenantID string
}

// token asks an OAuth 2.0 token endpoint for an access token: not an effect.
func (n *notifier) token(ctx context.Context) (*http.Response, error) {
	form := url.Values{}
	form.Set("grant_type", "client_credentials")
	endpoint := n.aadBase + "/" + n.tenantID + "/oauth2/v2.0/token"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	return n.client.Do(req)
}

// installationToken asks GitHub for an App installation token (POST
// /app/installations/{id}/access_tokens): a fresh token each time, not an
// effect.
func (n *notifier) installationToken(ctx context.Context, id int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/app/installations/%d/access_tokens", n.aadBase, id), nil)
	if err != nil {
		return nil, err
	}
	return n.client.Do(req)
}

// discoveredToken posts the client-credentials form to a token URL read
// from the provider's discovery document (wave 17, provisioning-backend's
// go-oidc TokenURL): the form says it is a token request, not an effect.
func (n *notifier) discoveredToken(ctx context.Context, tokenURL string) (*http.Response, error) {
	body := "grant_type=client_credentials&scope=api.console"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	return n.client.Do(req)
}

// post sends the notification itself: an effect.
func (n *notifier) post(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.aadBase+"/v3/conversations", nil)
	if err != nil {
		return nil, err
	}
	return n.client.Do(req) // want `an HTTP request \(http.Client.Do\)`
}

func (n *notifier) handle(msg *message.Message) error {
	if _, err := n.token(msg.Context()); err != nil {
		return err
	}
	if _, err := n.discoveredToken(msg.Context(), n.aadBase); err != nil {
		return err
	}
	if _, err := n.installationToken(msg.Context(), 7); err != nil {
		return err
	}
	_, err := n.post(msg.Context())
	return err
}

func registerNotifier(r *message.Router, n *notifier) {
	r.AddNoPublisherHandler("notify", "t", nil, n.handle)
}
