package effect

import (
	"bytes"
	"context"
	"net/http"

	"github.com/ThreeDotsLabs/watermill/message"
)

// users is a user service's client.
type users struct {
	client *http.Client
	base   string
}

// ValidateUser asks the user service whether a user may order (wave 20,
// golang-full): a POST that asks a question, not an effect.
func (u *users) ValidateUser(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.base+"/users/check", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	return u.client.Do(req)
}

// fraudScore posts the payment to a model's /predict endpoint (wave 19,
// payment-processor): a prediction, not an effect.
func (u *users) fraudScore(body []byte) (*http.Response, error) {
	return u.client.Post(u.base+"/api/v1/fraud-ml/predict", "application/json", bytes.NewReader(body))
}

// welcome sends the welcome message: an effect.
func (u *users) welcome(body []byte) (*http.Response, error) {
	return u.client.Post(u.base+"/users/welcome", "application/json", bytes.NewReader(body)) // want `an HTTP request \(http.Client.Post\)`
}

func (u *users) handle(msg *message.Message) error {
	if _, err := u.ValidateUser(msg.Context(), msg.Payload); err != nil {
		return err
	}
	if _, err := u.fraudScore(msg.Payload); err != nil {
		return err
	}
	_, err := u.welcome(msg.Payload)
	return err
}

func registerUsers(r *message.Router, u *users) {
	r.AddNoPublisherHandler("users", "t", nil, u.handle)
}
