package ackgapvet

import (
	"go/ast"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Effect classes: what a repeated call touches, highest blast radius first.
// A class names the effect in findings ("a payment call (charge.New)"), and
// the finding's [Severity] follows from it through [DefaultSeverityPatterns]:
// payment is critical; email, SMS and notification are high; storage and
// publish are medium unless the names around them say more.
const (
	ClassPayment      = "payment"      // money moves: stripe-go, Adyen, Braintree, PayPal
	ClassEmail        = "email"        // a person gets mail: SendGrid, Mailgun, Postmark, SES
	ClassSMS          = "sms"          // a person gets a text: Twilio
	ClassNotification = "notification" // a push or fan-out to people: SNS, Firebase messaging
	ClassStorage      = "storage"      // an object store write: GCS, Azure Blob, MinIO
	ClassPublish      = "publish"      // a message to another system: Pub/Sub, NATS, RabbitMQ
	ClassKubernetes   = "kubernetes"   // an object made in a Kubernetes cluster: client-go, controller-runtime
	ClassHTTP         = "http"         // any other outside call: issue trackers, code hosts, incident tools
	// ClassSearch is a search index: Elasticsearch, OpenSearch,
	// Meilisearch, Typesense, Algolia. Its writes name the document they
	// set (an index by id, a bulk add, a delete), so a repeat leaves what
	// the first left: they are work (a failure dropped, or an ack before
	// them, loses the change), never repeated effects.
	ClassSearch = "search"
)

// classDesc is how a finding names an effect of each class.
var classDesc = map[string]string{
	ClassPayment:      "a payment call",
	ClassEmail:        "an email",
	ClassSMS:          "an SMS",
	ClassNotification: "a notification",
	ClassStorage:      "a storage write",
	ClassPublish:      "a publish",
	ClassKubernetes:   "a Kubernetes API write",
	ClassHTTP:         "an outside call",
	ClassSearch:       "a search index write",
}

// KnownSDKs maps import path prefixes of SDKs whose calls are effects to
// their class. A prefix matches its package and the packages below it
// (github.com/stripe/stripe-go matches github.com/stripe/stripe-go/v76/charge).
// A call into one is an effect when it changes something: for the publish
// class a method named Publish... or Send...; for the others a call that
// returns an error and is neither a read (Get, List, Retrieve, Describe,
// Find, Search, Iter, Read, Fetch, Query, Scan, Head, Lookup, Parse,
// Validate, Close, Wait), a Dial, nor a constructor (New... without a ...Params
// argument: stripe's charge.New(params) creates a charge). What these SDKs
// do inside (their HTTP calls) is never reported on its own. The
// configuration file's "effects" and "not_effects" (see [Config]) add to
// and override this table; the table itself is read while checks run and
// must not be changed then.
var KnownSDKs = map[string]string{
	"github.com/stripe/stripe-go":                                  ClassPayment,
	"github.com/adyen/adyen-go-api-library":                        ClassPayment,
	"github.com/braintree-go/braintree-go":                         ClassPayment,
	"github.com/plutov/paypal":                                     ClassPayment,
	"github.com/sendgrid/sendgrid-go":                              ClassEmail,
	"github.com/mailgun/mailgun-go":                                ClassEmail,
	"github.com/keighl/postmark":                                   ClassEmail,
	"github.com/mrz1836/postmark":                                  ClassEmail,
	"gopkg.in/gomail.v2":                                           ClassEmail,
	"github.com/go-gomail/gomail":                                  ClassEmail,
	"github.com/wneessen/go-mail":                                  ClassEmail,
	"github.com/jordan-wright/email":                               ClassEmail,
	"github.com/xhit/go-simple-mail":                               ClassEmail,
	"github.com/resend/resend-go":                                  ClassEmail,
	"github.com/resendlabs/resend-go":                              ClassEmail, // Resend's SDK before it moved to github.com/resend
	pathAWSSvc + "ses":                                             ClassEmail,
	pathAWSSvc + "sesv2":                                           ClassEmail,
	pathAWSv1Svc + "ses":                                           ClassEmail,
	pathAWSv1Svc + "sesv2":                                         ClassEmail,
	"github.com/twilio/twilio-go":                                  ClassSMS,
	"github.com/sfreiberg/gotwilio":                                ClassSMS,
	pathAWSSvc + "sns":                                             ClassNotification,
	pathAWSv1Svc + "sns":                                           ClassNotification,
	"firebase.google.com/go/messaging":                             ClassNotification,
	"firebase.google.com/go/v4/messaging":                          ClassNotification,
	"cloud.google.com/go/storage":                                  ClassStorage,
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob":         ClassStorage,
	"github.com/minio/minio-go":                                    ClassStorage,
	"cloud.google.com/go/pubsub":                                   ClassPublish,
	pathNATS:                                                       ClassPublish,
	"github.com/rabbitmq/amqp091-go":                               ClassPublish,
	"github.com/streadway/amqp":                                    ClassPublish,
	"github.com/Azure/azure-sdk-for-go/sdk/messaging/azservicebus": ClassPublish,
	// Messages to people through chat and push services.
	"github.com/slack-go/slack":                       ClassNotification,
	"github.com/nlopes/slack":                         ClassNotification, // slack-go's path before it moved
	"github.com/bwmarrin/discordgo":                   ClassNotification,
	"github.com/go-telegram-bot-api/telegram-bot-api": ClassNotification,
	"github.com/go-telegram/bot":                      ClassNotification,
	"gopkg.in/telebot.v3":                             ClassNotification,
	"github.com/appleboy/go-fcm":                      ClassNotification,
	"github.com/sideshow/apns2":                       ClassNotification,
	"github.com/PagerDuty/go-pagerduty":               ClassNotification, // an incident pages someone
	"github.com/opsgenie/opsgenie-go-sdk-v2":          ClassNotification,
	"github.com/andygrunwald/go-jira":                 ClassHTTP,
	"github.com/google/go-github":                     ClassHTTP,
	"github.com/xanzy/go-gitlab":                      ClassHTTP,
	"gitlab.com/gitlab-org/api/client-go":             ClassHTTP,
	"github.com/segmentio/analytics-go":               ClassHTTP,
	"github.com/elastic/go-elasticsearch":             ClassSearch,
	"github.com/opensearch-project/opensearch-go":     ClassSearch,
	"github.com/meilisearch/meilisearch-go":           ClassSearch,
	"github.com/typesense/typesense-go":               ClassSearch,
	"github.com/algolia/algoliasearch-client-go":      ClassSearch,
	"k8s.io/client-go":                                ClassKubernetes,
	"sigs.k8s.io/controller-runtime":                  ClassKubernetes,
	"sigs.k8s.io/cluster-api/util/patch":              ClassKubernetes,
}

// underPrefix reports whether path is prefix or a package below it.
func underPrefix(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// longestPrefix returns the class of the longest prefix of path in m.
func longestPrefix(m map[string]string, path string) (prefix, class string) {
	for p, c := range m {
		if underPrefix(path, p) && len(p) > len(prefix) {
			prefix, class = p, c
		}
	}
	return prefix, class
}

// readVerbs start the names of SDK calls that only read or tidy up.
var readVerbs = []string{"Get", "List", "Retrieve", "Describe", "Find", "Search", "Iter", "Read", "Fetch", "Query", "Scan", "Head", "Lookup", "Parse", "Validate", "Close", "Wait", "Watch", "Unmarshal", "Marshal", "Decode", "Encode"}

// sdkKeyedVerbs start the names of the calls of a notification, outside
// service or Kubernetes SDK that set, change or remove what exists under
// its key (Slack's UpdateMessage, Jira's DeleteIssue, a Kubernetes object's
// Update, Patch or Apply, an object store's PutObject): a repeat leaves
// what the first call left, so they are work, not effects (see
// sdkKeyedWrite). Payment SDKs are not read this way: a refund's Update
// may move money.
var sdkKeyedVerbs = append(slices.Clone(overwriteVerbs), "Update", "Patch", "Apply", "Edit")

// sdkKeyed reports whether an SDK of class names its changes by key with
// name (see sdkKeyedVerbs).
func sdkKeyed(name, class string) bool {
	return class != ClassPayment && class != ClassPublish && startsWithVerb(name, sdkKeyedVerbs)
}

// searchWrite reports whether fn, in a search SDK, changes the index: not
// a read by its name, nor by its request type's (esapi's and
// opensearchapi's SearchRequest.Do, GetRequest.Do, CountRequest.Do), nor
// set-up (a constructor, a function of no receiver).
func searchWrite(fn *types.Func) bool {
	recv := strings.TrimSuffix(strings.TrimSuffix(recvName(fn), "Request"), "Service")
	if readName(fn.Name()) || readName(recv) || recvName(fn) == "" || strings.HasPrefix(fn.Name(), "New") || strings.HasPrefix(fn.Name(), "With") {
		return false
	}
	rs := fn.Type().(*types.Signature).Results()
	return rs.Len() > 0 && isError(rs.At(rs.Len()-1).Type())
}

// sdkKeyedWrite reports whether fn is a keyed change through a known SDK
// (see sdkKeyedVerbs) that returns an error: no effect, but its failure is
// failed work.
func sdkKeyedWrite(fn *types.Func) bool {
	_, class := longestPrefix(KnownSDKs, funcPath(fn))
	if c := activeConfig(); c.notEffect(funcPath(fn)) {
		return false
	} else if _, cc := longestPrefix(c.effects, funcPath(fn)); cc != "" {
		class = cc
	}
	if class == ClassSearch {
		return searchWrite(fn)
	}
	if class == "" || !sdkKeyed(fn.Name(), class) {
		return false
	}
	rs := fn.Type().(*types.Signature).Results()
	return rs.Len() > 0 && isError(rs.At(rs.Len()-1).Type())
}

// sdkMutates reports whether a call of fn into an SDK of class changes
// something (see [KnownSDKs]).
func sdkMutates(fn *types.Func, class string) bool {
	name := fn.Name()
	if class == ClassSearch {
		return false // keyed writes (sdkKeyedWrite), not effects
	}
	if class == ClassPublish {
		return strings.HasPrefix(name, "Publish") || strings.HasPrefix(name, "Send") || name == "Produce"
	}
	if class == ClassEmail && (recvName(fn) == "Msg" || recvName(fn) == "Message") && !strings.Contains(name, "Send") {
		return false // building the message (go-mail's From, To, AttachReader): the client's Send mails it
	}
	sig := fn.Type().(*types.Signature)
	rs := sig.Results()
	if rs.Len() == 0 || !isError(rs.At(rs.Len()-1).Type()) {
		return false
	}
	if readName(name) || name == "Dial" || sdkKeyed(name, class) { // Dial opens a connection (gomail); DialAndSend sends
		return false
	}
	if class == ClassKubernetes && recvName(fn) == "" {
		return false // rest.InClusterConfig, kubernetes.NewForConfig, client.New: set-up, not a call to the cluster
	}
	if strings.HasPrefix(name, "New") {
		for i := range sig.Params().Len() {
			if strings.HasSuffix(typeName(sig.Params().At(i).Type()), "Params") {
				return true
			}
		}
		return false
	}
	return true
}

// knownEffect classifies a call by the package it calls into, before the
// generic rules of effectOf: the configuration's not_effects (never an
// effect) and effects, [KnownSDKs], aws-sdk-go v1 service clients, and
// confluent-kafka-go. known is false when none of them covers fn's package;
// desc is "" for a call that is covered and not an effect.
func knownEffect(fn *types.Func) (desc string, known bool) {
	path := funcPath(fn)
	cfg := activeConfig()
	if cfg.notEffect(path) {
		return "", true
	}
	if _, class := longestPrefix(cfg.effects, path); class != "" {
		if sdkMutates(fn, class) {
			return classDesc[class] + " (" + qualName(fn) + ")", true
		}
		return "", true
	}
	if isConfluent(path) {
		if recvName(fn) == "Producer" && fn.Name() == "Produce" {
			return "a publish (" + qualName(fn) + ")", true
		}
		return "", true
	}
	if svc, ok := isAWSv1Client(fn); ok {
		op := awsV1Op(fn.Name())
		switch {
		case svc == "sqs" && op != "SendMessage" && op != "SendMessageBatch":
			return "", true // receive/ack mechanics and queue administration
		case keyedOverwrite(pathAWSSvc+svc, op):
			return "", true
		case !awsMutates(op):
			return "", true
		}
		if class := KnownSDKs[pathAWSv1Svc+svc]; class != "" {
			return classDesc[class] + " (" + qualName(fn) + ")", true
		}
		return "an AWS call (" + qualName(fn) + ")", true
	}
	if _, class := longestPrefix(KnownSDKs, path); class != "" {
		if sdkMutates(fn, class) {
			return classDesc[class] + " (" + qualName(fn) + ")", true
		}
		return "", true
	}
	return "", false
}

// classifiedPackage reports whether fn's package is classified by
// [knownEffect]: its own calls are judged there, so its [Summary] (what it
// does inside, such as an SDK's HTTP requests) is not used.
func classifiedPackage(fn *types.Func) bool {
	if funcPath(fn) == "net/http" {
		return true // judged at the call (effectOf): a GET is not an effect
	}
	_, known := knownEffect(fn)
	return known
}

// ackOfMore classifies the acks of confluent-kafka-go (CommitMessage,
// CommitOffsets, Commit, StoreMessage, StoreOffsets: a stored offset is
// committed by the background auto-commit), SQS deletes (DeleteMessage,
// DeleteMessageBatch) in every form [sqsOp] knows (aws-sdk-go v1 and v2
// clients and an application's interface over either), JetStream's acks
// and go-redis's XACK and LREM.
func ackOfMore(fn *types.Func) string {
	name := fn.Name()
	if confluentConsumerMethod(fn) {
		switch name {
		case "CommitMessage", "CommitOffsets", "Commit", "StoreMessage", "StoreOffsets":
			return qualName(fn)
		}
	}
	if op := sqsOp(fn); op == "DeleteMessage" || op == "DeleteMessageBatch" {
		return qualName(fn)
	}
	if (funcPath(fn) == pathGoCDK || isPubSub(funcPath(fn))) && recvName(fn) == "Message" && name == "Ack" {
		return qualName(fn)
	}
	if isKCL(funcPath(fn)) && name == "Checkpoint" {
		return qualName(fn)
	}
	if isNATS(funcPath(fn)) && (name == "Ack" || name == "AckSync" || name == "DoubleAck" || name == "Term" || name == "TermWithReason") {
		return qualName(fn) // JetStream; Term acks the message as failed for good
	}
	if isGoRedis(funcPath(fn)) && (name == "XAck" || name == "LRem") {
		return qualName(fn) // a stream entry's ack; a reliable list's removal from its processing list
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil && (name == "Ack" || name == "Done") {
		// A message that acks itself (see KindMsgChan).
		if recv := sig.Recv().Type(); selfAckMethod(recv) != nil && carriesPayload(recv) {
			return qualName(fn)
		}
	}
	if kafkaAckName[name] && appKafkaMethod(fn) {
		return qualName(fn)
	}
	return ""
}

// kafkaAckName and kafkaPublishName are the Kafka clients' names for an
// offset mark or commit and for a produce.
var (
	kafkaAckName     = map[string]bool{"MarkCommitRecords": true, "CommitRecords": true, "CommitUncommittedOffsets": true, "CommitMessages": true, "MarkMessage": true, "MarkOffset": true, "CommitMessage": true, "CommitOffsets": true}
	kafkaPublishName = map[string]bool{"Produce": true, "ProduceSync": true, "TryProduce": true, "WriteMessages": true, "SendMessage": true, "SendMessages": true}
)

// appKafkaMethod reports whether fn is a method the application declares
// over a Kafka client (an interface that holds the client for tests, or a
// wrapper) that takes the client's record or message type: a method of
// that name then does what the client's does (kgo.Client.MarkCommitRecords
// behind a KafkaClientInterface is an offset mark).
func appKafkaMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || isKafkaClient(funcPath(fn)) {
		return false
	}
	for i := range sig.Params().Len() {
		t := sig.Params().At(i).Type()
		if sl, ok := t.(*types.Slice); ok {
			t = sl.Elem()
		}
		if isNamed(t, pathKgo, "Record") || isNamed(t, pathKafkaGo, "Message") || isNamed(t, pathConfluent, "Message") || isNamed(t, pathConfluent1, "Message") ||
			isNamed(t, "github.com/IBM/sarama", "ConsumerMessage") || isNamed(t, "github.com/Shopify/sarama", "ConsumerMessage") ||
			isNamed(t, "github.com/IBM/sarama", "ProducerMessage") || isNamed(t, "github.com/Shopify/sarama", "ProducerMessage") {
			return true
		}
	}
	return false
}

// createsByName reports whether the package treats a Kubernetes
// AlreadyExists error as success somewhere (apimachinery's
// errors.IsAlreadyExists, in the function that creates or in its caller):
// its Creates name their objects, so a redelivery finds the object made and
// makes nothing (field trial, wave 30: secureCodeBox's scans, created under
// a name derived from the image, the error read one call up).
func createsByName(pass *analysis.Pass) bool {
	found := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if fn := callee(pass.TypesInfo, c); fn != nil && fn.Name() == "IsAlreadyExists" && strings.HasPrefix(funcPath(fn), "k8s.io/apimachinery/") {
					found = true
				}
			}
			return !found
		})
	}
	return found
}
