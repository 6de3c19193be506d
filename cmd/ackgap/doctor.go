package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/ackgap/ackgap"
	"github.com/ackgap/ackgap/brokers/kafkabroker"
	"github.com/ackgap/ackgap/brokers/sqsbroker"
	"github.com/ackgap/ackgap/retention"
	"github.com/ackgap/ackgap/router"
	"github.com/ackgap/ackgap/stores"
	"github.com/ackgap/ackgap/stores/pgxstore"
)

// exitDoctorFailed is the exit code of "doctor" when a check failed.
const exitDoctorFailed = 5

// Check outcomes.
const (
	checkPass = "pass"
	checkWarn = "warn"
	checkFail = "fail"
)

// check is one line of the doctor's report.
type check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// doctorOpts are the doctor's flags.
type doctorOpts struct {
	// progress reads the stored watermarks (progress rows) of the Kafka
	// consumer; nil without --dsn or a store that has none.
	progress       func(ctx context.Context, topic string, partition int32) (int64, bool, error)
	handlerTimeout time.Duration
	inboxRetention time.Duration
	sqsQueueURLs   []string
	sqsEndpoint    string
	sqsRegion      string
	kafkaTarget
	kafkaConsumer string
}

// kafkaTarget is the Kafka consumer group and topics a command looks at
// ("doctor", "status"), from the same three flags.
type kafkaTarget struct {
	kafkaBrokers []string
	kafkaTopics  []string
	kafkaGroup   string
}

// addFlags registers --kafka-brokers, --kafka-topic and --kafka-group.
func (k *kafkaTarget) addFlags(f *pflag.FlagSet) {
	f.StringSliceVar(&k.kafkaBrokers, "kafka-brokers", nil, "Kafka bootstrap brokers, host:port, comma-separated")
	f.StringArrayVar(&k.kafkaTopics, "kafka-topic", nil, "Kafka topic to check (repeat for several)")
	f.StringVar(&k.kafkaGroup, "kafka-group", "", "the consumer group of the topics")
}

// validate requires the topics and the group with the brokers.
func (k *kafkaTarget) validate() error {
	if len(k.kafkaBrokers) > 0 && (len(k.kafkaTopics) == 0 || k.kafkaGroup == "") {
		return usageErrorf("--kafka-brokers needs --kafka-topic and --kafka-group")
	}
	return nil
}

// connect returns a Sarama client on the brokers, named clientID, and a
// cluster admin over it; closing the client closes both.
func (k *kafkaTarget) connect(clientID string) (sarama.Client, sarama.ClusterAdmin, error) {
	sc := sarama.NewConfig()
	sc.Version = kafkabroker.VersionDefault
	sc.ClientID = clientID
	client, err := sarama.NewClient(k.kafkaBrokers, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot connect: %w", err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("cluster admin: %w", err)
	}
	return client, admin, nil
}

func (a *app) doctorCommand() *cobra.Command {
	var o doctorOpts
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check a deployment against ackgap's rules: schema, retention, visibility timeout, redrive policy, lag",
		Long: `Check a deployment against the rules ackgap enforces in code, one line per
check with pass, warn or fail and the fix. Checks run for what is given:

  --dsn                     schema version current; what a database failover or
                            crash can take back (PostgreSQL: standby, synchronous
                            replication, synchronous_commit); inbox size and growth; outbox
                            backlog, its oldest due row and dead rows; rows held
                            for direct dispatch (reported, never a warning)
  --sqs-queue-url (repeat)  visibility timeout >= 6 x --handler-timeout; a redrive
                            policy; queue retention (+ its dead-letter queue's)
                            <= --inbox-retention
  --kafka-brokers, --kafka-topic (repeat), --kafka-group
                            topic retention.ms <= --inbox-retention; the consumer
                            group exists; its lag per partition; with --dsn too,
                            whether its committed offsets are behind the inbox
                            (records after them already applied, --kafka-consumer)

SQS credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
AWS_SESSION_TOKEN; the region from --sqs-region or AWS_REGION; --sqs-endpoint
(env ACKGAP_SQS_ENDPOINT) points at a local server. Exit code 5 when a check
fails; warnings exit 0.`,
		Example: `  ackgap doctor --dsn "$DATABASE_URL" --handler-timeout 30s --inbox-retention 360h \
    --sqs-queue-url https://sqs.eu-west-1.amazonaws.com/123456789012/orders
  ackgap doctor --kafka-brokers kafka:9092 --kafka-topic orders --kafka-group billing --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.handlerTimeout <= 0 || o.inboxRetention <= 0 {
				return usageErrorf("--handler-timeout and --inbox-retention must be positive")
			}
			if !cmd.Flags().Changed("sqs-endpoint") {
				o.sqsEndpoint = a.env.getenv("ACKGAP_SQS_ENDPOINT")
			}
			if o.sqsRegion == "" {
				o.sqsRegion = a.env.getenv("AWS_REGION")
			}
			if a.dsn == "" && len(o.sqsQueueURLs) == 0 && len(o.kafkaBrokers) == 0 {
				return usageErrorf("nothing to check: give --dsn, --sqs-queue-url or --kafka-brokers")
			}
			if err := o.kafkaTarget.validate(); err != nil {
				return err
			}
			if o.kafkaConsumer != "" && (a.dsn == "" || len(o.kafkaBrokers) == 0) {
				return usageErrorf("--kafka-consumer names the inbox to compare with: it needs --dsn and --kafka-brokers")
			}
			ctx := cmd.Context()
			var checks []check
			if a.dsn != "" {
				cs, err := a.doctorStore(ctx, &o)
				if err != nil {
					return err
				}
				checks = append(checks, cs...)
			}
			if len(o.sqsQueueURLs) > 0 {
				cs, err := a.doctorSQS(ctx, &o)
				if err != nil {
					return err
				}
				checks = append(checks, cs...)
			}
			if len(o.kafkaBrokers) > 0 {
				var lookup inboxLookup
				if a.dsn != "" {
					s, closeFn, err := a.open(ctx, openExisting)
					if err != nil {
						return err
					}
					defer closeFn()
					lookup = storeLookup(s, cmp.Or(o.kafkaConsumer, o.kafkaGroup))
					if pr, ok := s.(progressStore); ok {
						o.progress = pr.ProgressReader(cmp.Or(o.kafkaConsumer, o.kafkaGroup))
					}
				}
				checks = append(checks, doctorKafka(ctx, &o, lookup, a.env.now())...)
			}
			return a.printChecks(cmd, checks)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.handlerTimeout, "handler-timeout", router.HandlerTimeoutDefault, "the router's Config.HandlerTimeout")
	f.DurationVar(&o.inboxRetention, "inbox-retention", retention.RetentionDefault, "the inbox pruner's retention.Config.Retention")
	f.StringArrayVar(&o.sqsQueueURLs, "sqs-queue-url", nil, "SQS queue to check (repeat for several)")
	f.StringVar(&o.sqsEndpoint, "sqs-endpoint", "", "SQS endpoint URL, for a local server (env ACKGAP_SQS_ENDPOINT)")
	f.StringVar(&o.sqsRegion, "sqs-region", "", "AWS region (env AWS_REGION)")
	o.kafkaTarget.addFlags(f)
	f.StringVar(&o.kafkaConsumer, "kafka-consumer", "", "the inbox consumer name of the group's handler (default: the group id)")
	return cmd
}

// printChecks prints the report and returns the exit status it calls for.
func (a *app) printChecks(cmd *cobra.Command, checks []check) error {
	failedN, warned := 0, 0
	for _, c := range checks {
		switch c.Status {
		case checkFail:
			failedN++
		case checkWarn:
			warned++
		}
	}
	w := cmd.OutOrStdout()
	if a.json {
		if err := printJSON(w, struct {
			Checks []check `json:"checks"`
			Failed int     `json:"failed"`
			Warned int     `json:"warned"`
		}{checks, failedN, warned}); err != nil {
			return failed(err)
		}
	} else {
		for _, c := range checks {
			fmt.Fprintf(w, "%-4s  %s: %s\n", c.Status, c.Name, c.Detail)
			if c.Fix != "" && c.Status != checkPass {
				fmt.Fprintf(w, "      fix: %s\n", c.Fix)
			}
		}
		fmt.Fprintf(w, "%d check(s): %d failed, %d warned\n", len(checks), failedN, warned)
	}
	if failedN > 0 {
		return &exitError{code: exitDoctorFailed}
	}
	return nil
}

// doctorStore checks the schema version, the inbox and the outbox.
func (a *app) doctorStore(ctx context.Context, o *doctorOpts) ([]check, error) {
	s, closeFn, err := a.open(ctx, openExisting)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	ms, err := s.MigrationStatus(ctx, &stores.MigrationStatusParams{})
	if err != nil {
		return nil, failed(err)
	}
	var checks []check
	c := check{Name: "schema version", Status: checkPass, Detail: fmt.Sprintf("version %d of %d", ms.Version, ms.Latest)}
	switch {
	case ms.Version == 0:
		// The words of every other command on a mistyped --schema.
		c.Status, c.Detail, c.Fix = checkFail, a.noTables(), noTablesFix
	case ms.Version < ms.Latest:
		c.Status, c.Fix = checkFail, migrateFix
	}
	checks = append(checks, c)
	if ps, ok := s.(*pgxstore.Store); ok {
		checks = append(checks, doctorFailover(ctx, ps))
	}
	if ms.Version == 0 {
		return checks, nil
	}
	st, err := s.Stats(ctx, &stores.StatsParams{Now: a.env.now()})
	if err != nil {
		return nil, failed(err)
	}
	var rows int64
	var rate float64
	var oldest time.Time
	for _, in := range st.Inbox {
		rows += in.Rows
		// The rule of status and the console: over the window, or since the
		// consumer's oldest row when that is shorter.
		rate += in.PerMinute(in.RateWindow(st.Window, st.Now))
		if oldest.IsZero() || in.Oldest.Before(oldest) {
			oldest = in.Oldest
		}
	}
	c = check{Name: "inbox size", Status: checkPass, Detail: fmt.Sprintf("%d rows in %d consumer(s), %.2f rows/min (over the last %s, or since a consumer's oldest row), oldest %s old",
		rows, len(st.Inbox), rate, st.Window, fmtAge(st.Now, oldest))}
	// Rows older than the retention plus a pruning interval mean no pruner runs.
	if !oldest.IsZero() && st.Now.Sub(oldest) > o.inboxRetention+retention.IntervalDefault {
		c.Status = checkWarn
		c.Fix = "run retention.Pruner (retention.New(store, cfg).Run(ctx)) on one instance; inbox rows are kept forever without it"
	}
	checks = append(checks, c)
	totals := map[stores.OutboxState]int64{}
	for _, o := range st.Outbox {
		totals[o.State] += o.Rows
	}
	pending := totals[stores.OutboxPending]
	due := "no row is due"
	if !st.OldestDueAt.IsZero() {
		due = "oldest due row waited " + fmtAge(st.Now, st.OldestDueAt)
	}
	c = check{Name: "outbox backlog", Status: checkPass, Detail: fmt.Sprintf("pending %d (%d due, %d held, %d waiting out a retry backoff), claimed %d, dead %d, done %d; %s",
		pending, pending-st.Held-st.Backoff, st.Held, st.Backoff,
		totals[stores.OutboxClaimed], totals[stores.OutboxDead], totals[stores.OutboxDone], due)}
	switch {
	case totals[stores.OutboxDead] > 0:
		c.Status, c.Fix = checkWarn, `"ackgap outbox list --state dead" shows why; fix the cause, then "ackgap outbox redrive"`
	case !st.OldestDueAt.IsZero() && st.Now.Sub(st.OldestDueAt) > 5*time.Minute:
		c.Status, c.Fix = checkWarn, "the relays are behind or not running: start outbox.Relay.Run on each instance, or add relays"
	}
	checks = append(checks, c)
	// Held rows are not due, so nothing can be late yet: whether the
	// relay holding them is alive shows only once their holds end, when
	// they are due and the backlog check above sees them wait.
	c = check{Name: "outbox held rows", Status: checkPass, Detail: "none held for dispatch or delayed"}
	if st.Held > 0 {
		c.Detail = fmt.Sprintf("%d held for dispatch or delayed (never tried, not due yet), the first until %s (in %s): "+
			"if the process holding them died, any relay claims them once their holds end",
			st.Held, fmtTime(st.HeldUntil), fmtAge(st.HeldUntil, st.Now))
	}
	return append(checks, c), nil
}

// doctorSQS checks each queue's attributes, read with the AWS SDK.
func (a *app) doctorSQS(ctx context.Context, o *doctorOpts) ([]check, error) {
	id, secret := a.env.getenv("AWS_ACCESS_KEY_ID"), a.env.getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return nil, usageErrorf("SQS checks need AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	if o.sqsRegion == "" {
		return nil, usageErrorf("SQS checks need a region: --sqs-region or AWS_REGION")
	}
	token := a.env.getenv("AWS_SESSION_TOKEN")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	client := sqs.New(sqs.Options{
		Region:     o.sqsRegion,
		HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token, Source: "ackgap doctor environment"}, nil
		}),
	}, func(opts *sqs.Options) {
		if o.sqsEndpoint != "" {
			opts.BaseEndpoint = aws.String(o.sqsEndpoint)
		}
	})
	var checks []check
	for _, url := range o.sqsQueueURLs {
		checks = append(checks, sqsChecks(ctx, client, url, o)...)
	}
	return checks, nil
}

func queueAttrs(ctx context.Context, c *sqs.Client, url string) (map[string]string, error) {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		return nil, err
	}
	return out.Attributes, nil
}

func sqsChecks(ctx context.Context, c *sqs.Client, url string, o *doctorOpts) []check {
	name := "sqs " + url[strings.LastIndex(url, "/")+1:]
	attrs, err := queueAttrs(ctx, c, url)
	if err != nil {
		return []check{{Name: name, Status: checkFail, Detail: "cannot read the queue's attributes: " + err.Error(),
			Fix: "check the queue URL, the region and that the credentials may call sqs:GetQueueAttributes"}}
	}
	var checks []check
	vis := seconds(attrs[string(types.QueueAttributeNameVisibilityTimeout)])
	want := time.Duration(float64(o.handlerTimeout) * sqsbroker.VisibilityFactorDefault)
	cv := check{Name: name + " visibility timeout", Status: checkPass,
		Detail: fmt.Sprintf("%s >= %g x handler timeout %s", vis, sqsbroker.VisibilityFactorDefault, o.handlerTimeout)}
	if vis < want {
		cv.Status = checkFail
		cv.Detail = fmt.Sprintf("%s < %g x handler timeout %s = %s: a slow handler's message is delivered again while it runs",
			vis, sqsbroker.VisibilityFactorDefault, o.handlerTimeout, want)
		cv.Fix = fmt.Sprintf("set the queue's VisibilityTimeout to at least %d s, or lower the router's HandlerTimeout", int(want.Seconds()))
	}
	checks = append(checks, cv)

	window := seconds(attrs[string(types.QueueAttributeNameMessageRetentionPeriod)])
	windowDetail := fmt.Sprintf("queue retention %s", days(window))
	cr := check{Name: name + " redrive policy", Status: checkPass}
	if raw := attrs[string(types.QueueAttributeNameRedrivePolicy)]; raw == "" {
		cr.Status, cr.Detail = checkFail, "none: a message that always fails is received until the queue's retention drops it"
		cr.Fix = "set a RedrivePolicy with a deadLetterTargetArn and a maxReceiveCount (e.g. 5)"
	} else {
		var rp struct {
			DeadLetterTargetArn string `json:"deadLetterTargetArn"`
			MaxReceiveCount     any    `json:"maxReceiveCount"`
		}
		_ = json.Unmarshal([]byte(raw), &rp)
		cr.Detail = fmt.Sprintf("maxReceiveCount %v to %s", rp.MaxReceiveCount, rp.DeadLetterTargetArn)
		// A message redriven from the dead-letter queue can come back as
		// late as the DLQ's retention after it left the queue.
		if dlq := rp.DeadLetterTargetArn[strings.LastIndex(rp.DeadLetterTargetArn, ":")+1:]; dlq != "" {
			if u, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(dlq)}); err == nil {
				if da, err := queueAttrs(ctx, c, aws.ToString(u.QueueUrl)); err == nil {
					dlqRetention := seconds(da[string(types.QueueAttributeNameMessageRetentionPeriod)])
					window += dlqRetention
					windowDetail += fmt.Sprintf(" + dead-letter queue retention %s", days(dlqRetention))
				}
			}
		}
	}
	checks = append(checks, cr)

	ci := check{Name: name + " inbox retention", Status: checkPass,
		Detail: fmt.Sprintf("inbox retention %s >= %s", days(o.inboxRetention), windowDetail)}
	if o.inboxRetention < window {
		ci.Status = checkFail
		ci.Detail = fmt.Sprintf("inbox retention %s < %s = %s: a redelivery after its inbox row was pruned is applied twice",
			days(o.inboxRetention), windowDetail, days(window))
		ci.Fix = fmt.Sprintf("set retention.Config.Retention (and RedeliveryWindow) to at least %s, or shorten the queues' retention", window)
	}
	return append(checks, ci)
}

// doctorKafka checks topic retention, the consumer group and its lag, and,
// when lookup is not nil, the group's committed offsets against the inbox.
func doctorKafka(ctx context.Context, o *doctorOpts, lookup inboxLookup, now time.Time) []check {
	client, admin, err := o.kafkaTarget.connect("ackgap-doctor")
	if err != nil {
		return []check{{Name: "kafka", Status: checkFail, Detail: err.Error(), Fix: "check --kafka-brokers and the network"}}
	}
	defer client.Close()
	var checks []check
	for _, topic := range o.kafkaTopics {
		checks = append(checks, kafkaRetention(admin, topic, o))
	}
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		return append(checks, check{Name: "kafka group " + o.kafkaGroup, Status: checkFail, Detail: "list groups: " + err.Error()})
	}
	if _, ok := groups[o.kafkaGroup]; !ok {
		return append(checks, check{Name: "kafka group " + o.kafkaGroup, Status: checkFail,
			Detail: "does not exist: no consumer of this group has committed an offset",
			Fix:    "check the group id in kafkabroker.SubscriberConfig (ConsumerGroup) and that the service runs"})
	}
	for _, topic := range o.kafkaTopics {
		checks = append(checks, kafkaLag(client, admin, topic, o.kafkaGroup))
	}
	if lookup != nil {
		for _, topic := range o.kafkaTopics {
			checks = append(checks, kafkaBehindInbox(ctx, client, admin, topic, o, lookup, now))
		}
	}
	if o.progress != nil {
		for _, topic := range o.kafkaTopics {
			checks = append(checks, kafkaProgress(ctx, client, admin, topic, o))
		}
	}
	return checks
}

// progressStore is a store with progress rows (pgxstore, sqlitestore).
type progressStore interface {
	ProgressReader(consumer string) func(ctx context.Context, topic string, partition int32) (int64, bool, error)
}

// kafkaProgress compares the group's committed offset of each partition
// of topic with the watermark the database stored (progress rows): a
// database behind the group lost commits the broker already passed (a
// failover to a standby that missed them, a restore, an offset committed
// past what was applied), and a partition without a committed offset
// where the database stored a watermark (the group or its offsets deleted
// by hand) starts from Consumer.Offsets.Initial unless the subscriber
// reads the watermark. Both warn: a subscriber with
// SubscriberConfig.Progress replays or resumes at its next assignment;
// without it the records are lost or applied again.
func kafkaProgress(ctx context.Context, client sarama.Client, admin sarama.ClusterAdmin, topic string, o *doctorOpts) check {
	name := "kafka group " + o.kafkaGroup + " offsets vs stored watermarks on " + topic
	offsets, err := groupOffsets(client, admin, topic, o.kafkaGroup)
	if err != nil {
		return check{Name: name, Status: checkFail, Detail: err.Error()}
	}
	var behind, missing []string
	rows := 0
	for _, po := range offsets {
		stored, ok, err := o.progress(ctx, topic, po.partition)
		if err != nil {
			return check{Name: name, Status: checkFail, Detail: "progress rows: " + err.Error()}
		}
		if !ok {
			continue
		}
		rows++
		if po.committed < 0 {
			missing = append(missing, fmt.Sprintf("p%d: no committed offset, stored watermark %d", po.partition, stored))
		}
		if po.committed >= 0 && stored < po.committed {
			behind = append(behind, fmt.Sprintf("p%d: committed offset %d, stored watermark %d (%d record(s) the database may not hold)",
				po.partition, po.committed, stored, po.committed-stored))
		}
	}
	if rows == 0 {
		return check{Name: name, Status: checkPass, Detail: "no progress rows for this consumer (kafkabroker.SubscriberConfig.Progress not set): a database that loses commits is not detected"}
	}
	var detail, fix []string
	if len(behind) > 0 {
		detail = append(detail, "database behind the group: "+strings.Join(behind, "; "))
		fix = append(fix, "a subscriber with kafkabroker.SubscriberConfig.Progress replays them at its next partition assignment (a running one is at most one transaction per partition behind: wait or restart it); without it they are lost")
	}
	if len(missing) > 0 {
		detail = append(detail, "the group has no committed offset where the database stored a watermark (group or offsets deleted by hand, group renamed): "+strings.Join(missing, "; "))
		fix = append(fix, "a subscriber with kafkabroker.SubscriberConfig.Progress starts these partitions from the stored watermark (kafkabroker.LogGroupOffsetMissing); without it they start from Consumer.Offsets.Initial: the oldest offset applies again what the inbox pruner dropped, the newest skips what was never applied")
	}
	if len(detail) > 0 {
		return check{Name: name, Status: checkWarn, Detail: strings.Join(detail, "; "), Fix: strings.Join(fix, "; ")}
	}
	return check{Name: name, Status: checkPass, Detail: fmt.Sprintf("database not behind the group on %d partition(s)", rows)}
}

func kafkaRetention(admin sarama.ClusterAdmin, topic string, o *doctorOpts) check {
	name := "kafka topic " + topic + " retention"
	results, err := admin.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}}}, sarama.DescribeConfigsOptions{})
	if err == nil {
		err = topicConfigError(results, topic)
	}
	if err != nil {
		return check{Name: name, Status: checkFail, Detail: "describe config: " + err.Error(), Fix: "check the topic name and the credentials' DescribeConfigs right"}
	}
	var entries []sarama.ConfigEntry
	for _, r := range results {
		if r.Name == topic {
			entries = append(entries, r.Configs...)
		}
	}
	for _, e := range entries {
		if e.Name != "retention.ms" {
			continue
		}
		ms, err := strconv.ParseInt(e.Value, 10, 64)
		if err != nil {
			return check{Name: name, Status: checkWarn, Detail: fmt.Sprintf("retention.ms %q is not a number", e.Value)}
		}
		if ms < 0 {
			return check{Name: name, Status: checkFail, Detail: "retention.ms is -1 (kept forever): a replay from the start can go past any inbox retention",
				Fix: "set retention.ms on the topic, and the inbox retention at least as long"}
		}
		window := time.Duration(ms) * time.Millisecond
		if o.inboxRetention < window {
			return check{Name: name, Status: checkFail,
				Detail: fmt.Sprintf("inbox retention %s < topic retention %s: a replay after its inbox row was pruned is applied twice", days(o.inboxRetention), days(window)),
				Fix:    fmt.Sprintf("set retention.Config.Retention (and RedeliveryWindow) to at least %s, or lower the topic's retention.ms", window)}
		}
		return check{Name: name, Status: checkPass, Detail: fmt.Sprintf("inbox retention %s >= topic retention %s", days(o.inboxRetention), days(window))}
	}
	return check{Name: name, Status: checkWarn, Detail: "retention.ms not reported", Fix: "check the topic's retention.ms by hand"}
}

// partitionOffsets are a group's committed offset on one partition (-1
// when none) and the partition's end (the next offset to be written).
type partitionOffsets struct {
	partition         int32
	committed, newest int64
	// metadata is the committed offset's metadata ("" when none).
	metadata string
}

// groupOffsets returns group's committed offsets and the ends of topic's
// partitions, ordered by partition.
func groupOffsets(client sarama.Client, admin sarama.ClusterAdmin, topic, group string) ([]partitionOffsets, error) {
	partitions, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("partitions: %w", err)
	}
	resp, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{topic: partitions})
	if err != nil {
		return nil, fmt.Errorf("committed offsets: %w", err)
	}
	sort.Slice(partitions, func(i, j int) bool { return partitions[i] < partitions[j] })
	out := make([]partitionOffsets, 0, len(partitions))
	for _, p := range partitions {
		newest, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, fmt.Errorf("partition %d newest offset: %w", p, err)
		}
		committed, metadata := int64(-1), ""
		if b := resp.GetBlock(topic, p); b != nil {
			committed, metadata = b.Offset, b.Metadata
		}
		out = append(out, partitionOffsets{partition: p, committed: committed, newest: newest, metadata: metadata})
	}
	return out, nil
}

func kafkaLag(client sarama.Client, admin sarama.ClusterAdmin, topic, group string) check {
	name := "kafka group " + group + " lag on " + topic
	offsets, err := groupOffsets(client, admin, topic, group)
	if err != nil {
		return check{Name: name, Status: checkFail, Detail: err.Error()}
	}
	var parts []string
	var missing []string
	var total int64
	for _, po := range offsets {
		if po.committed < 0 {
			missing = append(missing, strconv.Itoa(int(po.partition)))
			parts = append(parts, fmt.Sprintf("p%d=- (end %d)", po.partition, po.newest))
			continue
		}
		total += po.newest - po.committed
		parts = append(parts, fmt.Sprintf("p%d=%d", po.partition, po.newest-po.committed))
	}
	c := check{Name: name, Status: checkPass, Detail: fmt.Sprintf("lag %d: %s", total, strings.Join(parts, " "))}
	if len(missing) > 0 {
		c.Status = checkWarn
		c.Fix = "no committed offset on partition(s) " + strings.Join(missing, ", ") +
			": the group starts there from its offset reset policy (kafkabroker reads from the oldest)"
	}
	return c
}

// Limits of the check of committed offsets against the inbox.
const (
	// kafkaScanMax caps the records read after each partition's committed
	// offset: each costs one inbox lookup.
	kafkaScanMax = 20
	// kafkaCommitGrace is how long an applied message may wait for its
	// offset commit before the doctor warns: longer than a consumer in
	// good health takes to commit (kafkabroker commits right after the
	// ack).
	kafkaCommitGrace = time.Minute
	// kafkaFetchTimeout bounds the wait for the records of one partition.
	kafkaFetchTimeout = 10 * time.Second
)

// inboxLookup returns when the inbox row of eventID was written, and
// whether there is one.
type inboxLookup func(ctx context.Context, eventID string) (at time.Time, found bool, err error)

// storeLookup looks event ids up in consumer's inbox rows of s.
func storeLookup(s stores.Operator, consumer string) inboxLookup {
	return func(ctx context.Context, eventID string) (time.Time, bool, error) {
		res, err := s.LookupEvent(ctx, &stores.LookupEventParams{EventID: eventID, Consumer: consumer})
		if err != nil || len(res.Inbox) == 0 {
			return time.Time{}, false, err
		}
		return res.Inbox[0].ReceivedAt, true, nil
	}
}

// kafkaBehindInbox reads the first records after the group's committed
// offset on each partition of topic (at most kafkaScanMax) and looks their
// event ids up in the inbox. A record there was applied (its transaction
// committed) but its offset is not committed: a restart or a rebalance
// delivers it again, and the inbox skips the copy only while it keeps the
// row. Briefly that is the ack gap of a message in flight (pass); for
// longer than kafkaCommitGrace the group's offset commits stall (warn);
// past the inbox retention less one pruning interval the pruner may drop
// the row first, and the copy is then applied twice (fail).
func kafkaBehindInbox(ctx context.Context, client sarama.Client, admin sarama.ClusterAdmin, topic string, o *doctorOpts, lookup inboxLookup, now time.Time) check {
	consumer := cmp.Or(o.kafkaConsumer, o.kafkaGroup)
	name := "kafka group " + o.kafkaGroup + " offsets vs inbox on " + topic
	offsets, err := groupOffsets(client, admin, topic, o.kafkaGroup)
	if err != nil {
		return check{Name: name, Status: checkFail, Detail: err.Error()}
	}
	kc, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return check{Name: name, Status: checkFail, Detail: "consumer: " + err.Error()}
	}
	defer kc.Close()
	var parts []string
	var read, applied, noID int
	var oldest time.Time
	for _, po := range offsets {
		if po.committed < 0 || po.committed >= po.newest {
			continue
		}
		n := min(po.newest-po.committed, kafkaScanMax)
		recs, err := readRecords(ctx, kc, topic, po.partition, po.committed, int(n))
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			// The topic's retention deleted the records from the committed
			// offset on: the group skips to the oldest kept.
			parts = append(parts, fmt.Sprintf("p%d: committed offset %d no longer on the topic", po.partition, po.committed))
			continue
		}
		if err != nil {
			return check{Name: name, Status: checkFail, Detail: err.Error()}
		}
		var here int
		for _, rec := range recs {
			read++
			msg, err := kafkabroker.Marshaler{}.Unmarshal(rec)
			id := ""
			if err == nil {
				id = msg.Metadata.Get(ackgap.MetadataEventIDKey)
			}
			if id == "" {
				noID++
				continue
			}
			at, found, err := lookup(ctx, id)
			if err != nil {
				return check{Name: name, Status: checkFail, Detail: "inbox lookup: " + err.Error(), Fix: "check --dsn and that the schema is migrated"}
			}
			if !found {
				continue
			}
			here++
			if oldest.IsZero() || at.Before(oldest) {
				oldest = at
			}
		}
		if here > 0 {
			parts = append(parts, fmt.Sprintf("p%d: %d of the %d record(s) from offset %d applied", po.partition, here, len(recs), po.committed))
		}
		applied += here
	}
	scanned := fmt.Sprintf("read %d record(s) after the committed offsets", read)
	if noID > 0 {
		scanned += fmt.Sprintf(", %d without an event id", noID)
	}
	if applied == 0 {
		if len(parts) > 0 {
			scanned += "; " + strings.Join(parts, "; ")
		}
		return check{Name: name, Status: checkPass, Detail: fmt.Sprintf(
			"not behind: none of the records after the committed offsets is in inbox %q (%s)", consumer, scanned)}
	}
	age := now.Sub(oldest)
	detail := fmt.Sprintf("%s; in inbox %q but not committed, the oldest applied %s ago (%s)",
		strings.Join(parts, "; "), consumer, age.Round(time.Second), scanned)
	switch {
	case age > o.inboxRetention-retention.IntervalDefault:
		return check{Name: name, Status: checkFail,
			Detail: detail + ": the pruner may delete these inbox rows before a restart or rebalance delivers the records again, which then applies them twice",
			Fix: "find why the group's offset commits stall (refused commits, kafkabroker.ErrCommitRefused, in the consumer's logs; a message stuck at the committed offset holds back the commits after it) " +
				"and let the group commit while the rows are kept, or raise retention.Config.Retention"}
	case age > kafkaCommitGrace:
		return check{Name: name, Status: checkWarn,
			Detail: detail + ": a restart or rebalance delivers them again, and the inbox skips the copies as duplicates while it keeps their rows",
			Fix: "the group's offset commits stall or the consumer stopped after applying: look for refused commits (kafkabroker.ErrCommitRefused) in its logs, " +
				"and for a message stuck at the committed offset (retrying, or a hung handler), which holds back the commits after it"}
	}
	return check{Name: name, Status: checkPass, Detail: detail + ": the ack gap of messages in flight, committed shortly"}
}

// readRecords reads n records of topic's partition from offset on.
func readRecords(ctx context.Context, kc sarama.Consumer, topic string, partition int32, offset int64, n int) ([]*sarama.ConsumerMessage, error) {
	pc, err := kc.ConsumePartition(topic, partition, offset)
	if err != nil {
		return nil, fmt.Errorf("partition %d from offset %d: %w", partition, offset, err)
	}
	defer func() { _ = pc.Close() }() // waits for its fetches to end
	timeout := time.NewTimer(kafkaFetchTimeout)
	defer timeout.Stop()
	recs := make([]*sarama.ConsumerMessage, 0, n)
	for len(recs) < n {
		select {
		case rec := <-pc.Messages():
			recs = append(recs, rec)
		case err := <-pc.Errors():
			return nil, fmt.Errorf("partition %d from offset %d: %w", partition, offset, err)
		case <-timeout.C:
			return nil, fmt.Errorf("partition %d from offset %d: %d of %d record(s) in %s", partition, offset, len(recs), n, kafkaFetchTimeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return recs, nil
}

// seconds parses an SQS attribute in whole seconds; "" or junk is 0.
func seconds(s string) time.Duration {
	n, _ := strconv.Atoi(s)
	return time.Duration(n) * time.Second
}

// days formats d with its length in days.
func days(d time.Duration) string {
	n := d.Hours() / 24
	if n == 1 {
		return fmt.Sprintf("%s (1 day)", d)
	}
	return fmt.Sprintf("%s (%.4g days)", d, n)
}

// topicConfigError returns the per-resource error DescribeConfigs reported for
// topic (a *sarama.DescribeConfigError, as the deprecated DescribeConfig
// returned it), or nil.
func topicConfigError(results []*sarama.ConfigResourceResult, topic string) error {
	for _, r := range results {
		if r.Name == topic && r.ErrorCode != sarama.ErrNoError {
			return &sarama.DescribeConfigError{Err: r.ErrorCode, ErrMsg: r.ErrorMsg}
		}
	}
	return nil
}
