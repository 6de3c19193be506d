// Package jobq receives jobs from SQS once per call and decodes them: the
// loop is its caller's (field trial, wave 43: Messanger's
// ReceiveReportJobs).
package jobq

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Job is one report job.
type Job struct{ ID, URL string }

// Queue is the job queue.
type Queue struct{ C *sqs.Client }

// Receive takes up to ten jobs and their receipt handles.
func (q *Queue) Receive(ctx context.Context) ([]Job, []string, error) {
	out, err := q.C.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{})
	if err != nil {
		return nil, nil, err
	}
	var jobs []Job
	var handles []string
	for _, m := range out.Messages {
		var j Job
		if err := json.Unmarshal([]byte(*m.Body), &j); err != nil {
			continue
		}
		jobs = append(jobs, j)
		handles = append(handles, *m.ReceiptHandle)
	}
	return jobs, handles, nil
}

// Delete acks one job.
func (q *Queue) Delete(ctx context.Context, handle string) error {
	_, err := q.C.DeleteMessage(ctx, &sqs.DeleteMessageInput{ReceiptHandle: &handle})
	return err
}
