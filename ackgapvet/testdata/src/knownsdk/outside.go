package knownsdk

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/slack-go/slack"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
	"k8s.io/client-go/rest"
)

// registerOps posts to Slack and starts a Kubernetes Job per message
// (field trial, wave 29: rezible's Slack posts, ssjdispatcher's Jobs):
// the post and the create repeat on redelivery; reads and changes by key
// do not.
func registerOps(r *message.Router, sc *slack.Client, jobs batchv1.JobInterface) {
	r.AddNoPublisherHandler("incident", "incidents", nil, func(msg *message.Message) error {
		ctx := msg.Context()
		if _, err := sc.GetUserInfoContext(ctx, "U1"); err != nil { // clean: a read
			return err
		}
		var cb slack.InteractionCallback
		if err := cb.UnmarshalJSON(msg.Payload); err != nil { // clean: a decode
			return err
		}
		if _, err := rest.InClusterConfig(); err != nil { // clean: set-up, no call to the cluster
			return err
		}
		_, ts, err := sc.PostMessageContext(ctx, "C1", slack.MsgOptionText(string(msg.Payload), false)) // want `high: a notification \(slack.Client.PostMessageContext\) on the consumer path`
		if err != nil {
			return err
		}
		if _, _, _, err := sc.UpdateMessageContext(ctx, "C1", ts); err != nil { // clean: changes the message it names
			return err
		}
		if _, err := jobs.Get(ctx, "sweep", batchv1.GetOptions{}); err != nil { // clean: a read
			return err
		}
		if _, err := jobs.Update(context.Background(), &batchv1.Job{Name: "sweep"}, batchv1.UpdateOptions{}); err != nil { // clean: by name
			return err
		}
		_, err = jobs.Create(ctx, &batchv1.Job{GenerateName: "dispatch-"}, batchv1.CreateOptions{}) // want `a Kubernetes API write \(v1.JobInterface.Create\) on the consumer path`
		return err
	})
}
