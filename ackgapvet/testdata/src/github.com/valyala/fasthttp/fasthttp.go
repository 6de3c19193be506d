// Package fasthttp is a stub of valyala/fasthttp for analysistest.
package fasthttp

type Request struct{}
type Response struct{}
type Client struct{}

func (c *Client) Do(req *Request, resp *Response) error { return nil }
func Do(req *Request, resp *Response) error             { return nil }
