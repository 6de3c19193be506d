// Package slack is a stub of github.com/slack-go/slack for the checker's tests.
package slack

import "context"

// Client is Slack's Web API client.
type Client struct{}

// MsgOption configures a message.
type MsgOption func()

// MsgOptionText sets a message's text.
func MsgOptionText(text string, escape bool) MsgOption { return nil }

// PostMessageContext posts a message to a channel.
func (c *Client) PostMessageContext(ctx context.Context, channel string, opts ...MsgOption) (string, string, error) {
	return "", "", nil
}

// UpdateMessageContext changes a posted message.
func (c *Client) UpdateMessageContext(ctx context.Context, channel, ts string, opts ...MsgOption) (string, string, string, error) {
	return "", "", "", nil
}

// GetUserInfoContext reads a user.
func (c *Client) GetUserInfoContext(ctx context.Context, user string) (string, error) { return "", nil }

// InteractionCallback is a payload Slack posts to the app.
type InteractionCallback struct{ Type string }

// UnmarshalJSON decodes the payload.
func (c *InteractionCallback) UnmarshalJSON(b []byte) error { return nil }
