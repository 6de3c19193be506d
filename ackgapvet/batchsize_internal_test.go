package ackgapvet

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDropWholeBatchOfOne: lambdabatch's whole-batch finding is dropped
// when every event source mapping in the repository's Terraform takes one
// record at a time (waves 34 and 35: boca-chica-bot, jobPing), found in
// the module's folder or its parent; a stream's only when the retries are
// bounded too; kept when any mapping takes the default batch. An SST or
// Serverless Framework stack is read the same way when there is no
// Terraform (wave 38: pocok).
func TestDropWholeBatchOfOne(t *testing.T) {
	sqsMsg := Finding{Check: "lambdabatch", Message: "returning an error for one record fails the whole SQS batch: ..."}
	streamMsg := Finding{Check: "lambdabatch", Message: "returning an error for one record fails the whole Kinesis batch: ..."}
	other := Finding{Check: "errack", Message: "a record whose work fails ..."}
	mapping := func(body string) string {
		return "resource \"aws_lambda_event_source_mapping\" \"m\" {\n" + body + "\n  function_name = aws_lambda_function.f.arn\n}\n"
	}
	for _, tc := range []struct {
		name, tf   string
		inParent   bool
		wantChecks []string
	}{
		{"batch of one, SQS dropped, stream kept", mapping("  batch_size = 1"), false, []string{"lambdabatch", "errack"}},
		{"batch of one with bounded retries", mapping("  batch_size = 1\n  maximum_retry_attempts = 1"), false, []string{"errack"}},
		{"in the parent of a module folder", mapping("  batch_size = 1\n  maximum_retry_attempts = 2"), true, []string{"errack"}},
		{"default batch", mapping("  enabled = true"), false, []string{"lambdabatch", "lambdabatch", "errack"}},
		{"one of two mappings batches", mapping("  batch_size = 1") + mapping("  batch_size = 10"), false, []string{"lambdabatch", "lambdabatch", "errack"}},
		{"no Terraform", "", false, []string{"lambdabatch", "lambdabatch", "errack"}},
		{"SST stack, batches of one", "ts:" + sstQueue("A", 1) + sstQueue("B", 1), false, []string{"lambdabatch", "errack"}},
		{"SST stack, one default batch", "ts:" + sstQueue("A", 1) + "new Queue(this, \"B\", { consumer: \"src/b.handler\" });\n", false, []string{"lambdabatch", "lambdabatch", "errack"}},
		{"Serverless Framework, batch of one", "yml:functions:\n  ship:\n    handler: bin/ship\n    events:\n      - sqs:\n          arn: arn:aws:sqs:eu-west-1:1:ship\n          batchSize: 1\n", false, []string{"lambdabatch", "errack"}},
		{"SAM, batch of one, IAM actions beside it", "yml:Resources:\n  Fn:\n    Properties:\n      Policies:\n        - Statement:\n            Action:\n              - sqs:ReceiveMessage\n              - sqs:DeleteMessage\n      Events:\n        Q:\n          Type: SQS\n          Properties:\n            BatchSize: 1\n", false, []string{"lambdabatch", "errack"}},
		{"Go CDK, three stages of one", "go:" + goCDKStack(1, 1, 1), false, []string{"lambdabatch", "errack"}},
		{"Go CDK, one stage of ten", "go:" + goCDKStack(1, 10, 1), false, []string{"lambdabatch", "lambdabatch", "errack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			root := filepath.Join(repo, "backend")
			require.NoError(t, os.MkdirAll(filepath.Join(repo, "infra"), 0o755))
			require.NoError(t, os.MkdirAll(root, 0o755))
			if tc.tf != "" {
				dir := root
				if tc.inParent {
					dir = filepath.Join(repo, "infra")
				}
				name, text := "lambda.tf", tc.tf
				if ext, body, ok := strings.Cut(tc.tf, ":"); ok && (ext == "ts" || ext == "yml" || ext == "go") {
					name, text = "stack."+ext, body
				}
				require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
			}
			var got []string
			for _, f := range dropWholeBatch([]Finding{sqsMsg, streamMsg, other}, root) {
				got = append(got, f.Check)
			}
			require.Equal(t, tc.wantChecks, got)
		})
	}
}

// goCDKStack is a CDK stack written in Go whose stages' SQS event sources
// take batches of the sizes given (field trial, wave 43: lady-glass).
func goCDKStack(sizes ...int) string {
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n\t\"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources\"\n\t\"github.com/aws/jsii-runtime-go\"\n)\n\nfunc stages() {\n")
	for _, n := range sizes {
		fmt.Fprintf(&b, "\tfn.AddEventSource(awslambdaeventsources.NewSqsEventSource(q, &awslambdaeventsources.SqsEventSourceProps{\n\t\tBatchSize: jsii.Number(%d),\n\t}))\n", n)
	}
	b.WriteString("}\n")
	return b.String()
}

// sstQueue is an SST Queue construct whose consumer takes batches of
// size records.
func sstQueue(name string, size int) string {
	return fmt.Sprintf("new Queue(this, %q, {\n  consumer: {\n    function: { handler: \"src/%s/main.go\" },\n    consumerProps: { batchSize: %d },\n  },\n});\n", name, name, size)
}

// TestDropKqInOrder: commitorder's go-queue kq finding on a KqConf from
// configuration is dropped when a configuration file near the call (its
// service's etc folder, or a folder above it) sets CommitInOrder or one
// processor, and kept otherwise: another service's file does not decide
// (a new user's report), nor does a KqConf built in the code.
func TestDropKqInOrder(t *testing.T) {
	for _, tc := range []struct {
		name, file, text string
		kept             bool
	}{
		{"YAML CommitInOrder", "svc/orders/etc/orders.yaml", "Name: orders\nKqConf:\n  Topic: orders\n  CommitInOrder: true\n", false},
		{"YAML one processor", "svc/orders/etc/orders.yaml", "KqConf:\n  Processors: 1 # in order\n", false},
		{"JSON one processor", "svc/orders/config.json", "{\"KqConf\": {\"Processors\": 1}}\n", false},
		{"at the module root", "etc/all.yaml", "KqConf:\n  CommitInOrder: true\n", false},
		{"YAML eight processors", "svc/orders/etc/orders.yaml", "KqConf:\n  Processors: 8\n  Topic: orders\n", true},
		{"ten processors", "svc/orders/etc/orders.yaml", "KqConf:\n  Processors: 10\n", true},
		{"CommitInOrder false", "svc/orders/etc/orders.yml", "KqConf:\n  CommitInOrder: false\n", true},
		{"another service's file", "svc/payments/etc/payments.yaml", "KqConf:\n  CommitInOrder: true\n", true},
		{"no configuration", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, tc.file)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, tc.file), []byte(tc.text), 0o644))
			}
			require.NoError(t, os.MkdirAll(filepath.Join(root, "svc/orders/internal/mq"), 0o755))
			kqMsg := Finding{Check: "commitorder", Message: "go-queue's kq consumes this queue with KqConf.Processors goroutines (8 by default; " + kqFromConfig + "), ...", abs: filepath.Join(root, "svc/orders/internal/mq/mq.go")}
			inCode := Finding{Check: "commitorder", Message: "go-queue's kq consumes this queue with KqConf.Processors goroutines (8 by default; this KqConf, built in the code, sets neither ...), ...", abs: kqMsg.abs}
			got := dropKqInOrder([]Finding{kqMsg, inCode}, root)
			want := []Finding{inCode}
			if tc.kept {
				want = []Finding{kqMsg, inCode}
			}
			require.Equal(t, want, got)
		})
	}
}
