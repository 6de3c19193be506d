// Package retryablehttp is a stub of github.com/hashicorp/go-retryablehttp.
package retryablehttp

import "net/http"

// Request is a stub.
type Request struct{}

// NewRequest is a stub.
func NewRequest(method, url string, body interface{}) (*Request, error) { return &Request{}, nil }

// Client is a stub.
type Client struct{}

// Do is a stub.
func (c *Client) Do(req *Request) (*http.Response, error) { return nil, nil }
