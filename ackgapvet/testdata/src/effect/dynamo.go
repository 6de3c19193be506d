package effect

import (
	"errors"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

type posts struct{ db *dynamodb.Client }

// markPosted sets posted_at only if it is not set yet: a redelivery fails
// the condition.
func (p *posts) markPosted(msg *message.Message) error {
	cond := "attribute_not_exists(posted_at)"
	_, err := p.db.UpdateItem(msg.Context(), &dynamodb.UpdateItemInput{ConditionExpression: &cond})
	var ccf *dynamodb.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // posted already
	}
	return err
}

// bump has no condition.
func (p *posts) bump(msg *message.Message) error {
	_, err := p.db.UpdateItem(msg.Context(), &dynamodb.UpdateItemInput{}) // want `an AWS call \(dynamodb.Client.UpdateItem\)`
	return err
}

// errClaimed says another delivery holds the item.
var errClaimed = errors.New("claimed")

// claim takes the item only while it is pending (wave 20, bolt-monitor's
// ClaimExecutionWork): the condition's failure is turned into errClaimed
// by the caller's check of the SDK's error, elsewhere in the package.
func (p *posts) claim(msg *message.Message) error {
	cond := "#s = :pending"
	_, err := p.db.UpdateItem(msg.Context(), &dynamodb.UpdateItemInput{ConditionExpression: &cond})
	return err
}

func (p *posts) work(msg *message.Message) error {
	if err := p.claim(msg); err != nil {
		if errors.Is(err, errClaimed) {
			return nil
		}
		return err
	}
	return nil
}

func str(s string) *string { return &s }

// setStatus sets absolute values by key (waves 48 and 51): a repeat leaves
// the same item, as a PutItem does.
func (p *posts) setStatus(msg *message.Message) error {
	_, err := p.db.UpdateItem(msg.Context(), &dynamodb.UpdateItemInput{UpdateExpression: str("SET #s = :done, updated_at = :t")})
	return err
}

// countView adds to a counter: a repeat counts twice.
func (p *posts) countView(msg *message.Message) error {
	_, err := p.db.UpdateItem(msg.Context(), &dynamodb.UpdateItemInput{UpdateExpression: str("SET views = views + :one")}) // want `an AWS call \(dynamodb.Client.UpdateItem\)`
	return err
}

func registerPosts(r *message.Router, p *posts) {
	r.AddNoPublisherHandler("status", "t", nil, p.setStatus)
	r.AddNoPublisherHandler("views", "t", nil, p.countView)
	r.AddNoPublisherHandler("work", "t", nil, p.work)
	r.AddNoPublisherHandler("posted", "t", nil, p.markPosted)
	r.AddNoPublisherHandler("bump", "t", nil, p.bump)
}
