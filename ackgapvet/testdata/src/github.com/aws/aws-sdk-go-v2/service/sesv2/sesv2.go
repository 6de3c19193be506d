// Package sesv2 is a stub of aws-sdk-go-v2's SES v2 client.
package sesv2

import "context"

type Options struct{}
type SendEmailInput struct{ FromEmailAddress *string }
type SendEmailOutput struct{}
type GetAccountInput struct{}
type GetAccountOutput struct{}

type Client struct{}

func (c *Client) SendEmail(ctx context.Context, in *SendEmailInput, opts ...func(*Options)) (*SendEmailOutput, error) {
	return nil, nil
}
func (c *Client) GetAccount(ctx context.Context, in *GetAccountInput, opts ...func(*Options)) (*GetAccountOutput, error) {
	return nil, nil
}
