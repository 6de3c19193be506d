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
