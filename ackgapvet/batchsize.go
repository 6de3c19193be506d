package ackgapvet

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Lambda event source mappings in Terraform: a record handler whose
// mappings all take one record per invocation fails no processed record
// with the one that failed (field trial waves 34 and 35: boca-chica-bot's
// and jobPing's `batch_size = 1`).
var (
	tfMapping   = regexp.MustCompile(`resource\s+"aws_lambda_event_source_mapping"\s+"[^"]*"\s*\{`)
	tfBatchSize = regexp.MustCompile(`(?m)^\s*batch_size\s*=\s*(\d+)`)
	tfRetries   = regexp.MustCompile(`(?m)^\s*maximum_retry_attempts\s*=\s*(\d+)`)
)

// mappingsBatchOfOne reports whether the Terraform files under root, or
// under its parent when root has none (a module in a subfolder of its
// repository), declare at least one aws_lambda_event_source_mapping and
// every one of them sets batch_size = 1 (one), and whether every one also
// bounds its retries with maximum_retry_attempts (bounded: a stream's
// failed record then stops its shard for a few retries, not until it
// expires). A mapping without batch_size takes AWS's default (10 records
// for SQS, 100 for Kinesis and DynamoDB Streams: Lambda developer guide,
// "Batching behavior"); one without maximum_retry_attempts retries a
// stream's batch until its records expire.
func mappingsBatchOfOne(root string) (one, bounded bool) {
	if root == "" {
		return false, false
	}
	for _, dir := range iacDirs(root) {
		n, ones, bound := tfMappings(dir)
		if n == 0 {
			n, ones, bound = iacMappings(dir)
		}
		if n > 0 {
			return ones >= n, bound >= n
		}
	}
	return false, false
}

// iacDirs returns the folders whose infrastructure files speak for the
// module at root: root, then its parent when root may be a subfolder of
// its repository. Not the parent of a repository's root (root holds
// .git), nor a parent that is the file system's root, the temporary
// folder or the home folder: a module made there is no part of what sits
// beside it (a new user's /tmp/app picked up another folder's Terraform).
func iacDirs(root string) []string {
	dirs := []string{root}
	if _, err := os.Stat(filepath.Join(root, ".git")); err == nil {
		return dirs
	}
	up := filepath.Dir(root)
	home, _ := os.UserHomeDir()
	if up == root || up == filepath.Dir(up) || up == filepath.Clean(os.TempDir()) || home != "" && up == filepath.Clean(home) {
		return dirs
	}
	return append(dirs, up)
}

// tfMappings counts the event source mappings in the .tf files under dir
// (see eachFile), those of them with batch_size = 1, and those with
// batch_size = 1 and maximum_retry_attempts set.
func tfMappings(dir string) (n, ones, bounded int) {
	eachFile(dir, []string{".tf"}, func(text string) {
		for _, loc := range tfMapping.FindAllStringIndex(text, -1) {
			n++
			body := blockBody(text[loc[1]:])
			if m := tfBatchSize.FindStringSubmatch(body); m != nil {
				if v, _ := strconv.Atoi(m[1]); v == 1 {
					ones++
					if tfRetries.MatchString(body) {
						bounded++
					}
				}
			}
		}
	})
	return n, ones, bounded
}

// Event source mappings written with the AWS CDK or SST (TypeScript or
// JavaScript: new SqsEventSource(...), SST's new Queue(...) with a
// consumer), the Serverless Framework (`- sqs:` events) or SAM (`Type:
// SQS` events, AWS::Lambda::EventSourceMapping), read when a repository
// has no Terraform mapping (field trial, wave 38: pocok's SST stack). An
// IAM action in the same file (`- sqs:SendMessage`) is no Serverless
// event (field trial, wave 43: PR-Pilot's SAM template).
var (
	iacMapping   = regexp.MustCompile(`new\s+(?:\w+\.)*(?:SqsEventSource|KinesisEventSource|DynamoEventSource|Queue)\s*\(|(?m)^\s*-\s*(?:sqs|stream)\s*:(?:\s|$)|(?m)^\s*Type\s*:\s*(?:SQS|Kinesis|DynamoDB)\s*$|AWS::Lambda::EventSourceMapping`)
	iacBatchSize = regexp.MustCompile(`(?i)\bbatch_?size"?\s*[:=]\s*1\b`)
	iacRetries   = regexp.MustCompile(`(?i)\b(?:retryAttempts|maxRetries|maximumRetryAttempts)"?\s*[:=]\s*\d`)
	// The CDK in Go (aws-cdk-go): awslambdaeventsources.NewSqsEventSource(q,
	// &awslambdaeventsources.SqsEventSourceProps{BatchSize: jsii.Number(1)})
	// or awslambda.NewEventSourceMapping (field trial, wave 43: lady-glass's
	// infra/cdk/stack.go).
	goCDKMapping   = regexp.MustCompile(`awslambdaeventsources\.New(?:Sqs|Kinesis|Dynamo)EventSource\s*\(|awslambda\.NewEventSourceMapping\s*\(`)
	goCDKBatchSize = regexp.MustCompile(`\bBatchSize\s*:\s*jsii\.Number\(\s*1\s*\)`)
	goCDKRetries   = regexp.MustCompile(`\b(?:RetryAttempts|MaxRetries)\s*:\s*jsii\.Number\(`)
)

// iacMappings counts, like tfMappings, the event source mappings of the
// CDK, SST, Serverless Framework and SAM files under dir (.ts, .js, .mjs,
// .yml, .yaml, and .go files that import aws-cdk-go), the batch sizes of one among
// them, and the bounded retries. A construct is not matched with its own
// batch size: every mapping counts one, and the batch is of one when at
// least as many batch sizes of one are written (a queue with no consumer,
// such as a dead-letter queue, counts as a mapping and keeps the finding).
func iacMappings(dir string) (n, ones, bounded int) {
	eachFile(dir, []string{".ts", ".js", ".mjs", ".yml", ".yaml"}, func(text string) {
		n += len(iacMapping.FindAllStringIndex(text, -1))
		ones += len(iacBatchSize.FindAllStringIndex(text, -1))
		bounded += len(iacRetries.FindAllStringIndex(text, -1))
	})
	eachFile(dir, []string{".go"}, func(text string) {
		if !strings.Contains(text, "aws-cdk-go/") {
			return
		}
		n += len(goCDKMapping.FindAllStringIndex(text, -1))
		ones += len(goCDKBatchSize.FindAllStringIndex(text, -1))
		bounded += len(goCDKRetries.FindAllStringIndex(text, -1))
	})
	return n, ones, bounded
}

// eachFile calls f with the text of every file under dir whose name ends
// in one of exts (vendor, node_modules, .terraform and hidden folders
// skipped; at most 20,000 entries walked; unreadable files skipped).
func eachFile(dir string, exts []string, f func(text string)) {
	walked := 0
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if walked++; walked > 20000 {
			return filepath.SkipAll
		}
		if d.IsDir() {
			name := d.Name()
			if path != dir && (strings.HasPrefix(name, ".") || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.ContainsFunc(exts, func(e string) bool { return strings.HasSuffix(path, e) }) {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil {
			f(string(b))
		}
		return nil
	})
}

// blockBody returns text up to the brace that closes a block opened just
// before it.
func blockBody(text string) string {
	depth := 1
	for i, r := range text {
		switch r {
		case '{':
			depth++
		case '}':
			if depth--; depth == 0 {
				return text[:i]
			}
		}
	}
	return text
}

// dropWholeBatch drops lambdabatch's "fails the whole batch" findings when
// every event source mapping of the repository takes one record at a
// time: no processed record rides in the failed batch. For a stream
// (Kinesis, DynamoDB Streams, Kafka), whose failed batch also stops its
// shard or partition while Lambda retries it, only when every mapping
// bounds its retries too.
func dropWholeBatch(fs []Finding, root string) []Finding {
	one, bounded := mappingsBatchOfOne(root)
	if !one {
		return fs
	}
	out := fs[:0]
	for _, f := range fs {
		if f.Check == "lambdabatch" && strings.HasPrefix(f.Message, "returning an error for one record fails the whole") &&
			(bounded || strings.HasPrefix(f.Message, "returning an error for one record fails the whole SQS batch")) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// reportsFailures matches the setting that makes Lambda read a partial
// batch response, in Terraform (function_response_types =
// ["ReportBatchItemFailures"]), SAM and CloudFormation
// (FunctionResponseTypes), the CDK (reportBatchItemFailures: true), the
// Serverless Framework (functionResponseType) and SST alike.
var reportsFailures = regexp.MustCompile(`(?i)ReportBatchItemFailures`)

// dropFailuresHeard drops lambdabatch's failuresIgnored findings unless
// the repository declares event source mappings (Terraform, or else the
// CDK, SST, Serverless Framework or SAM; under root or its parent, as
// mappingsBatchOfOne reads them) and none of its files enables
// ReportBatchItemFailures: with no mapping in the repository (made by hand,
// or in another repository) nothing says the response is ignored (field
// trial, wave 39: Zircon's SAM template, H1).
func dropFailuresHeard(fs []Finding, root string) []Finding {
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == "lambdabatch" && f.Message == failuresIgnored }) {
		return fs
	}
	ignored := false
	if root != "" {
		for _, dir := range iacDirs(root) {
			n, _, _ := tfMappings(dir)
			if n == 0 {
				n, _, _ = iacMappings(dir)
			}
			if n > 0 {
				heard := false
				eachFile(dir, []string{".tf", ".ts", ".js", ".mjs", ".yml", ".yaml", ".json"}, func(text string) {
					heard = heard || reportsFailures.MatchString(text)
				})
				ignored = !heard
				break
			}
		}
	}
	if ignored {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool { return f.Check == "lambdabatch" && f.Message == failuresIgnored })
}

// kqInOrderSetting matches a go-queue kq setting in a configuration file
// (go-zero's YAML, or JSON or TOML) that keeps commits in partition order:
// CommitInOrder true, or a single processor.
var kqInOrderSetting = regexp.MustCompile(`(?i)\b(CommitInOrder"?\s*[:=]\s*true|Processors"?\s*[:=]\s*1)\b`)

// dropKqInOrder drops commitorder's go-queue kq findings whose KqConf
// comes from configuration (see kqProcessors) when a configuration file
// near the call sets CommitInOrder or a single processor: go-zero's
// conf.MustLoad reads the KqConf from the service's own file, which the
// code does not show. Near is the first folder, from the call's up to
// root, that holds configuration files (.yaml, .yml, .json, .toml) of its
// own or in an etc, config, configs or conf folder: one service's file
// does not decide for another's queue.
func dropKqInOrder(fs []Finding, root string) []Finding {
	if root == "" {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool {
		return kqFinding(f) && kqInOrderNear(filepath.Dir(f.abs), root)
	})
}

// kqInOrderNear reports whether the configuration files near dir (see
// dropKqInOrder) set CommitInOrder or a single processor.
func kqInOrderNear(dir, root string) bool {
	exts := []string{".yaml", ".yml", ".json", ".toml"}
	for {
		var texts []string
		for _, d := range []string{dir, filepath.Join(dir, "etc"), filepath.Join(dir, "config"), filepath.Join(dir, "configs"), filepath.Join(dir, "conf")} {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if !e.IsDir() && slices.ContainsFunc(exts, func(x string) bool { return strings.HasSuffix(e.Name(), x) }) {
					if b, err := os.ReadFile(filepath.Join(d, e.Name())); err == nil {
						texts = append(texts, string(b))
					}
				}
			}
		}
		if len(texts) > 0 {
			return slices.ContainsFunc(texts, kqInOrderSetting.MatchString)
		}
		up := filepath.Dir(dir)
		if dir == root || up == dir || !strings.HasPrefix(up, root) {
			return false
		}
		dir = up
	}
}

// kqFinding reports whether f is commitorder's go-queue kq finding whose
// KqConf comes from configuration.
func kqFinding(f Finding) bool {
	return f.Check == "commitorder" && strings.Contains(f.Message, kqFromConfig)
}
