package ackgapvet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDropWholeBatchOfOne: lambdabatch's whole-batch finding is dropped
// when every event source mapping in the repository's Terraform takes one
// record at a time (waves 34 and 35: boca-chica-bot, jobPing), found in
// the module's folder or its parent; a stream's only when the retries are
// bounded too; kept when any mapping takes the default batch.
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
				require.NoError(t, os.WriteFile(filepath.Join(dir, "lambda.tf"), []byte(tc.tf), 0o644))
			}
			var got []string
			for _, f := range dropWholeBatch([]Finding{sqsMsg, streamMsg, other}, root) {
				got = append(got, f.Check)
			}
			require.Equal(t, tc.wantChecks, got)
		})
	}
}

// TestDropKqInOrder: commitorder's go-queue kq finding is dropped when a
// configuration file of the module sets CommitInOrder or one processor
// (go-zero loads KqConf from YAML), and kept otherwise.
func TestDropKqInOrder(t *testing.T) {
	kqMsg := Finding{Check: "commitorder", Message: "go-queue's kq consumes this queue with KqConf.Processors goroutines (8 by default), ..."}
	other := Finding{Check: "commitorder", Message: "starts workers in a loop ..."}
	for _, tc := range []struct {
		name, file, text string
		wantKept         int
	}{
		{"YAML CommitInOrder", "etc/chat.yaml", "Name: chat\nKqConf:\n  Topic: chat\n  CommitInOrder: true\n", 1},
		{"YAML one processor", "etc/chat.yaml", "KqConf:\n  Processors: 1 # in order\n", 1},
		{"JSON one processor", "conf.json", "{\"KqConf\": {\"Processors\": 1}}\n", 1},
		{"ten processors", "etc/chat.yaml", "KqConf:\n  Processors: 10\n", 2},
		{"YAML eight processors", "etc/chat.yaml", "KqConf:\n  Processors: 8\n  Topic: chat\n", 2},
		{"CommitInOrder false", "etc/chat.yml", "KqConf:\n  CommitInOrder: false\n", 2},
		{"no configuration", "", "", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, tc.file)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(root, tc.file), []byte(tc.text), 0o644))
			}
			got := dropKqInOrder([]Finding{kqMsg, other}, root)
			require.Len(t, got, tc.wantKept)
			require.Equal(t, other, got[len(got)-1])
		})
	}
}
