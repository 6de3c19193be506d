package effect

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	retryablehttp "github.com/hashicorp/go-retryablehttp"
)

// SFNAPI is the application's interface over the Step Functions client.
type SFNAPI interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func()) (*sfn.StartExecutionOutput, error)
	DescribeExecution(ctx context.Context, in *sfn.DescribeExecutionInput, opts ...func()) (*sfn.DescribeExecutionOutput, error)
}

type pipeline struct {
	sfn  SFNAPI
	http *retryablehttp.Client
}

func (p *pipeline) start(msg *message.Message) error {
	if _, err := p.sfn.DescribeExecution(msg.Context(), &sfn.DescribeExecutionInput{}); err != nil { // clean: a read
		return err
	}
	_, err := p.sfn.StartExecution(msg.Context(), &sfn.StartExecutionInput{}) // want `an AWS call \(effect.SFNAPI.StartExecution\)`
	return err
}

func (p *pipeline) forward(msg *message.Message) error {
	req, err := retryablehttp.NewRequest("POST", "https://sink.example/", msg.Payload)
	if err != nil {
		return err
	}
	_, err = p.http.Do(req) // want `an HTTP request \(retryablehttp.Client.Do\)`
	return err
}

func registerPipeline(r *message.Router, p *pipeline) {
	r.AddNoPublisherHandler("start", "t", nil, p.start)
	r.AddNoPublisherHandler("forward", "t", nil, p.forward)
}
