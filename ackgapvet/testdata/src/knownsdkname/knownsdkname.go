// Package knownsdkname creates a Kubernetes Job under a name derived from
// the message and takes AlreadyExists for success, one call up (field
// trial, wave 30: secureCodeBox): a redelivery makes nothing, so the
// Create is no effect.
package knownsdkname

import (
	"context"

	"github.com/ThreeDotsLabs/watermill/message"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	batchv1 "k8s.io/client-go/kubernetes/typed/batch/v1"
)

func register(r *message.Router, jobs batchv1.JobInterface) {
	r.AddNoPublisherHandler("scan", "images", nil, func(msg *message.Message) error {
		if err := create(msg.Context(), jobs, "scan-"+string(msg.Payload)); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	})
}

func create(ctx context.Context, jobs batchv1.JobInterface, name string) error {
	_, err := jobs.Create(ctx, &batchv1.Job{Name: name}, batchv1.CreateOptions{}) // clean: named, and AlreadyExists is success
	return err
}
