// Package tickets is a stub of an oapi-codegen HTTP client.
package tickets

import (
	"context"
	"net/http"
)

type RequestEditorFn func(ctx context.Context, req *http.Request) error

type Row struct{ Columns []string }

type Receipt struct {
	TicketID       string
	IdempotencyKey string
}

type ClientWithResponses struct{}

type Response struct{ StatusCode int }

func (c *ClientWithResponses) PostSheetsSheetRowsWithResponse(ctx context.Context, sheet string, body Row, reqEditors ...RequestEditorFn) (*Response, error) {
	return nil, nil
}

func (c *ClientWithResponses) PutReceiptsWithResponse(ctx context.Context, body Receipt, reqEditors ...RequestEditorFn) (*Response, error) {
	return nil, nil
}

func (c *ClientWithResponses) GetReceiptWithResponse(ctx context.Context, id string, reqEditors ...RequestEditorFn) (*Response, error) {
	return nil, nil
}
