package ackgapvet

import (
	"cmp"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"weak"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/types/typeutil"
)

// Import paths the checks recognise. Sarama moved from Shopify to IBM; both
// are matched.
const (
	pathWatermill = "github.com/ThreeDotsLabs/watermill"
	pathAckgap    = "github.com/ackgap/ackgap"
	pathKgo       = "github.com/twmb/franz-go/pkg/kgo"
	pathKafkaGo   = "github.com/segmentio/kafka-go"
	pathGoZero    = "github.com/zeromicro/go-zero"
	pathGoQueueKq = "github.com/zeromicro/go-queue/kq"
	pathSQS       = "github.com/aws/aws-sdk-go-v2/service/sqs"
	pathAWSSvc    = "github.com/aws/aws-sdk-go-v2/service/"
	pathLambdaEvt = "github.com/aws/aws-lambda-go/events"
	pathGRPC      = "google.golang.org/grpc"
	pathSqlx      = "github.com/jmoiron/sqlx"
)

// isPgx and isPgxpool match pgx v4 and v5.
func isPgx(p string) bool {
	return p == "github.com/jackc/pgx/v5" || p == "github.com/jackc/pgx/v4"
}

func isPgxpool(p string) bool {
	return p == "github.com/jackc/pgx/v5/pgxpool" || p == "github.com/jackc/pgx/v4/pgxpool"
}

func isSaramaPath(p string) bool {
	return p == "github.com/IBM/sarama" || p == "github.com/Shopify/sarama" || p == pathSaramaCluster
}

// pathSaramaCluster is bsm/sarama-cluster, the consumer group library over
// Sarama from before Sarama had its own (archived; still in services).
const pathSaramaCluster = "github.com/bsm/sarama-cluster"

// callee returns the function or method a call invokes, or nil for calls of
// function values, conversions and builtins (and for a nil call).
func callee(info *types.Info, call *ast.CallExpr) *types.Func {
	if call == nil {
		return nil
	}
	fn, _ := typeutil.Callee(info, call).(*types.Func)
	return fn
}

// funcPath returns the import path of fn's package ("" for universe
// objects), as pkgPath gives it.
func funcPath(fn *types.Func) string {
	if fn == nil || fn.Pkg() == nil {
		return ""
	}
	return pkgPath(fn.Pkg())
}

// pkgPath returns p's import path without the vendor directory a GOPATH
// build gives it (github.com/org/app/vendor/github.com/aws/aws-sdk-go/...
// is the SDK), so that the rules that name a library's path match its
// vendored copy.
func pkgPath(p *types.Package) string {
	path := p.Path()
	if i := strings.LastIndex(path, "/vendor/"); i >= 0 {
		return path[i+len("/vendor/"):]
	}
	return strings.TrimPrefix(path, "vendor/")
}

// recvName returns the name of fn's receiver type without pointer ("" for a
// plain function).
func recvName(fn *types.Func) string {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return ""
	}
	return typeName(sig.Recv().Type())
}

// typeName returns the name of t's named type, through one pointer.
func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := types.Unalias(t).(*types.Named); ok {
		return n.Obj().Name()
	}
	return ""
}

// isNamed reports whether t (through one pointer) is the named type path.name.
func isNamed(t types.Type, path, name string) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == name && n.Obj().Pkg() != nil && pkgPath(n.Obj().Pkg()) == path
}

// qualName renders fn as pkg.Func or pkg.Recv.Method with the package's
// name, for messages.
func qualName(fn *types.Func) string {
	pkg := ""
	if fn.Pkg() != nil {
		pkg = fn.Pkg().Name()
	}
	if r := recvName(fn); r != "" {
		return pkg + "." + r + "." + fn.Name()
	}
	return pkg + "." + fn.Name()
}

// effectOf classifies a call as an external effect: something outside the
// database that a redelivery repeats. It returns a short description, or "".
func effectOf(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil {
		return ""
	}
	if funcPath(fn) == pathGRPC && fn.Name() == "Invoke" && len(call.Args) > 1 {
		// A generated client's cc.Invoke(ctx, "/pkg.Service/ListFollowing",
		// ...): the method's name says whether it reads (field trial, wave
		// 42: fansX's relation reads below its consumers).
		// The proto's method name may start lower-case (listFollowing).
		if m := stringValue(info, call.Args[1]); m != "" {
			if name := m[strings.LastIndex(m, "/")+1:]; name != "" && readName(strings.ToUpper(name[:1])+name[1:]) {
				return ""
			}
		}
	}
	if dynamoSetsOnly(info, fn, call) {
		return "" // a write by key: a repeat leaves the same item
	}
	if d, known := knownEffect(fn); known {
		return d
	}
	path, recv, name := funcPath(fn), recvName(fn), fn.Name()
	switch {
	case path == "net/http" && (recv == "Client" || recv == "") && (name == "Get" || name == "Head"):
		return "" // GET and HEAD are safe methods (RFC 9110, 9.2.1): repeating one changes nothing
	case path == "net/http" && recv == "Client" && (name == "Do" || name == "Post" || name == "PostForm"),
		path == "net/http" && recv == "" && (name == "Post" || name == "PostForm"):
		return "an HTTP request (" + qualName(fn) + ")"
	case path == "net/smtp" && (name == "SendMail" || recv == "Client" && (name == "Mail" || name == "Data")):
		return "an email (" + qualName(fn) + ")"
	case path == pathGRPC && recv == "ClientConn" && (name == "Invoke" || name == "NewStream"):
		return "a gRPC call (" + qualName(fn) + ")"
	case isGRPCClientMethod(fn) && !readName(name) && !overwriteName(name):
		return "a gRPC call (" + qualName(fn) + ")"
	case isOpenAPIClientMethod(fn) && !readName(name) && !overwriteName(name):
		return "an HTTP API call (" + qualName(fn) + ")"
	case path == pathSQS && recv == "Client" && name != "SendMessage" && name != "SendMessageBatch":
		return "" // the consumer's own receive/ack mechanics and queue administration
	case keyedOverwrite(path, name):
		return "" // idempotent when the key comes from the message
	case awsTelemetry(path, name):
		return "" // a metric, log or trace point: counted again on a redelivery, nobody is served twice
	case strings.HasPrefix(path, pathAWSSvc) && recv == "Client" && awsMutates(name):
		return "an AWS call (" + qualName(fn) + ")"
	case path == "github.com/hashicorp/go-retryablehttp" && recv == "Client" && (name == "Do" || name == "Post" || name == "PostForm"):
		return "an HTTP request (" + qualName(fn) + ")"
	case appAWSCall(fn):
		return "an AWS call (" + qualName(fn) + ")"
	case strings.HasPrefix(path, pathWatermill+"-sql") || strings.HasPrefix(path, pathWatermill+"/components/forwarder"):
		return "" // publishing into the database transaction: an outbox
	case strings.HasPrefix(path, pathWatermill) && name == "Publish":
		return "a publish (" + qualName(fn) + ")"
	case isSaramaPath(path) && (name == "SendMessage" || name == "SendMessages"),
		isSaramaPath(path) && recv == "AsyncProducer" && name == "Input": // p.Input() <- msg: the channel is only for sending
		return "a publish (" + qualName(fn) + ")"
	case path == pathKgo && recv == "Client" && (name == "Produce" || name == "ProduceSync" || name == "TryProduce"),
		kafkaPublishName[name] && appKafkaMethod(fn):
		return "a publish (" + qualName(fn) + ")"
	case path == pathKafkaGo && recv == "Writer" && name == "WriteMessages":
		return "a publish (" + qualName(fn) + ")"
	case path == "github.com/valyala/fasthttp" && (recv == "Client" || recv == "HostClient" || recv == "") && (name == "Do" || name == "DoTimeout" || name == "DoDeadline" || name == "DoRedirects" || name == "Post"):
		return "an HTTP request (" + qualName(fn) + ")"
	case strings.HasPrefix(path, "github.com/cloudevents/sdk-go") && (name == "Send" || name == "Request") && recv != "":
		return "a publish (" + qualName(fn) + ")"
	case path == pathAsynq && recv == "Client" && (name == "Enqueue" || name == "EnqueueContext") && !asynqKeyed(info, call):
		return "a job enqueued (" + qualName(fn) + ")"
	}
	return ""
}

// pathAsynq is hibiken/asynq, a Redis-backed job queue.
const pathAsynq = "github.com/hibiken/asynq"

// asynqKeyed reports whether an asynq Enqueue call is given asynq.TaskID
// (a second enqueue of the same id fails with ErrTaskIDConflict) or
// asynq.Unique (a duplicate within the TTL fails with ErrDuplicateTask):
// the queue dedupes it.
func asynqKeyed(info *types.Info, call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if c, ok := ast.Unparen(a).(*ast.CallExpr); ok {
			if fn := callee(info, c); fn != nil && funcPath(fn) == pathAsynq && (fn.Name() == "TaskID" || fn.Name() == "Unique") {
				return true
			}
		}
	}
	return false
}

// appAWSCall reports whether fn is the application's own method over an AWS
// client (an interface the code declares to stub the client, as
// aws-sdk-go-v2's docs suggest, or a wrapper): named after an operation
// that changes something (see awsMutates) and taking that operation's
// *<Op>Input from an SDK service package (v1 or v2). SQS operations other
// than sends are the consumer's own mechanics; writes by key overwrite.
func appAWSCall(fn *types.Func) bool {
	svc, op := appAWSOp(fn)
	switch {
	case svc == "":
		return false
	case svc == "sqs" && op != "SendMessage" && op != "SendMessageBatch":
		return false
	case keyedOverwrite(pathAWSSvc+svc, op):
		return false
	}
	return awsMutates(op)
}

// appAWSOp returns the AWS service and operation of the application's own
// function or method over an AWS client: named after the operation (v1's
// WithContext and Request forms too) and taking its *<Op>Input from an SDK
// service package (v1 or v2); "", "" for any other function, the SDK's own
// included.
func appAWSOp(fn *types.Func) (svc, op string) {
	if funcPath(fn) == "" || strings.HasPrefix(funcPath(fn), "github.com/aws/") {
		return "", ""
	}
	sig, ok := fn.Type().(*types.Signature)
	if !ok {
		return "", ""
	}
	op = awsV1Op(fn.Name())
	for i := range sig.Params().Len() {
		ptr, ok := types.Unalias(sig.Params().At(i).Type()).(*types.Pointer)
		if !ok {
			continue
		}
		named, ok := types.Unalias(ptr.Elem()).(*types.Named)
		if !ok || named.Obj().Pkg() == nil || named.Obj().Name() != op+"Input" {
			continue
		}
		p := pkgPath(named.Obj().Pkg())
		svc := strings.TrimPrefix(strings.TrimPrefix(p, pathAWSSvc), pathAWSv1Svc)
		if svc == p {
			return "", ""
		}
		return svc, op
	}
	return "", ""
}

// awsMutates reports whether an AWS SDK operation changes something outside
// (sends, publishes, writes, starts, launches or submits); reads (Get, List, Describe, Query,
// Scan) and accessors are not effects.
func awsMutates(op string) bool {
	for _, verb := range []string{"Send", "Publish", "Put", "Update", "Delete", "Create", "Invoke", "Start", "Write", "TransactWrite", "BatchWrite", "Upload", "Copy",
		"Run", "Submit", "Allocate", "Request", "Issue", "Purchase"} { // EC2 RunInstances, ECS RunTask, Batch SubmitJob, AllocateAddress, RequestSpotInstances, ACM PCA IssueCertificate
		if strings.HasPrefix(op, verb) {
			return true
		}
	}
	return false
}

// awsTelemetry reports whether an AWS operation records telemetry of the
// service itself: CloudWatch PutMetricData, CloudWatch Logs PutLogEvents,
// X-Ray PutTraceSegments and PutTelemetryRecords (field trial, wave 43:
// Messanger's metrics flushed from its receive loop's ticker). A repeat
// adds a data point; it serves nobody twice and changes no state that a
// redelivery could corrupt.
func awsTelemetry(path, op string) bool {
	switch path {
	case pathAWSSvc + "cloudwatch":
		return op == "PutMetricData"
	case pathAWSSvc + "cloudwatchlogs":
		return op == "PutLogEvents"
	case pathAWSSvc + "xray":
		return op == "PutTraceSegments" || op == "PutTelemetryRecords"
	}
	return false
}

// keyedOverwrite reports whether an AWS operation overwrites or deletes by
// key (S3 PutObject/DeleteObject, DynamoDB PutItem/DeleteItem/BatchWriteItem,
// Timestream WriteRecords):
// repeating it with the same key leaves the same state, so it is not reported
// as an effect. DynamoDB UpdateItem is (it may ADD).
func keyedOverwrite(path, op string) bool {
	switch path {
	case pathAWSSvc + "s3":
		return op == "PutObject" || op == "DeleteObject" || op == "DeleteObjects"
	case pathAWSSvc + "dynamodb":
		return op == "PutItem" || op == "DeleteItem" || op == "BatchWriteItem"
	case pathAWSSvc + "timestreamwrite":
		// A record is keyed by its dimensions, measure name and time; a
		// repeat of the same record is accepted and changes nothing
		// (Amazon Timestream Developer Guide, "Writes": idempotent
		// writes, upserts by Version).
		return op == "WriteRecords"
	}
	return false
}

// keyedWriteOf reports whether call is an AWS write by key (see
// keyedOverwrite) through the SDK's client (v1 or v2) or an application's
// interface over it (a method named after the operation taking its
// *<Op>Input), a Redis command that stores state (redisStateWrite), a
// known SDK's change by key (sdkKeyedWrite: a Kubernetes Patch), or a
// generated client's overwrite by key (overwriteName: a gRPC Upsert). It
// is no effect, since a repeat leaves the same state, but it is work: when
// it fails, what the message should have stored is lost.
func keyedWriteOf(info *types.Info, call *ast.CallExpr) bool {
	fn := callee(info, call)
	if fn == nil {
		return false
	}
	path, recv := funcPath(fn), recvName(fn)
	if strings.HasPrefix(path, pathAWSSvc) && recv == "Client" {
		return keyedOverwrite(path, fn.Name()) || dynamoSetsOnly(info, fn, call)
	}
	if svc, ok := isAWSv1Client(fn); ok {
		return keyedOverwrite(pathAWSSvc+svc, awsV1Op(fn.Name())) || dynamoSetsOnly(info, fn, call)
	}
	svc, op := appAWSOp(fn)
	return svc != "" && keyedOverwrite(pathAWSSvc+svc, op) || redisStateWrite(info, call) || sdkKeyedWrite(fn) ||
		(isGRPCClientMethod(fn) || isOpenAPIClientMethod(fn)) && overwriteName(fn.Name())
}

// notAbsolute matches the parts of a DynamoDB update expression whose
// repeat changes the item again: ADD, a list_append, arithmetic (SET n =
// n + :one).
var notAbsolute = regexp.MustCompile(`(?i)\bADD\b|list_append|[+-]`)

// dynamoSetsOnly reports whether call (of fn) is a DynamoDB UpdateItem
// of the SDK's client (v1 or v2) that only sets or removes attributes
// (see setsOnly).
func dynamoSetsOnly(info *types.Info, fn *types.Func, call *ast.CallExpr) bool {
	v1, _ := isAWSv1Client(fn)
	return (funcPath(fn) == pathAWSSvc+"dynamodb" || v1 == "dynamodb") && awsV1Op(fn.Name()) == "UpdateItem" && setsOnly(info, call)
}

// setsOnly reports whether call, a DynamoDB UpdateItem, is given an
// input literal whose UpdateExpression is a constant (a string constant,
// or aws.String of one) that only sets attributes to values or removes
// them (`SET #s = :s, updated_at = :t`, `REMOVE lease`): a repeat leaves
// the same item, as a PutItem does (field trial, waves 48 and 51: a
// status SET by key read as a repeated effect). An expression built at
// run time is not known to be one.
func setsOnly(info *types.Info, call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if u, ok := ast.Unparen(a).(*ast.UnaryExpr); ok && u.Op == token.AND {
			a = u.X
		}
		lit, ok := ast.Unparen(a).(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, e := range lit.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok || types.ExprString(kv.Key) != "UpdateExpression" {
				continue
			}
			v := kv.Value
			if c, ok := ast.Unparen(v).(*ast.CallExpr); ok && len(c.Args) == 1 {
				v = c.Args[0] // aws.String("SET ...")
			}
			tv, ok := info.Types[v]
			if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
				return false
			}
			expr := strings.TrimSpace(constant.StringVal(tv.Value))
			up := strings.ToUpper(expr)
			return (strings.HasPrefix(up, "SET ") || strings.HasPrefix(up, "REMOVE ")) && !notAbsolute.MatchString(expr)
		}
	}
	return false
}

// overwriteVerbs start the names of generated client methods (gRPC stubs,
// oapi-codegen clients) that set, replace or remove a resource by its key:
// a repeat leaves what the first call left, as HTTP's PUT and DELETE do
// (RFC 9110, 9.2.2). They are work, not effects.
var overwriteVerbs = []string{"Upsert", "Put", "Set", "Replace", "Delete", "Remove"}

// overwriteName reports whether a generated client's method name starts
// with an overwrite verb (see overwriteVerbs) followed by an upper-case
// letter or nothing (SetPayload, Upsert; not Settle).
func overwriteName(name string) bool {
	return startsWithVerb(name, overwriteVerbs)
}

// startsWithVerb reports whether name is one of verbs, or one of them
// followed by an upper-case letter (UpdateMessage, not Updater).
func startsWithVerb(name string, verbs []string) bool {
	for _, v := range verbs {
		if rest, ok := strings.CutPrefix(name, v); ok && (rest == "" || rest[0] >= 'A' && rest[0] <= 'Z') {
			return true
		}
	}
	return false
}

// redisStateCmd names the Redis commands that store state under a key
// (a sorted-set or hash member, a list or stream entry, several keys at
// once), and the Lua scripts that do it (EVAL, EVALSHA; EVAL_RO reads:
// field trial, wave 42: fansX's counters and inboxes written only by
// scripts). SETNX, HSETNX and SADD are claims (redisClaimCmd), INCR and its
// kin counters, DEL and EXPIRE housekeeping: none is counted here.
var redisStateCmd = map[string]bool{"ZAdd": true, "ZAddArgs": true, "ZAddNX": true, "ZAddXX": true, "HSet": true, "HMSet": true, "LPush": true, "RPush": true, "XAdd": true, "MSet": true, "Set": true, "Eval": true, "EvalSha": true}

// redisStateWrite reports whether call is a go-redis command that stores
// state (see redisStateCmd): a SET only with a constant zero expiration
// (no TTL), since a SET with a TTL is a cache whose failure the next read
// repairs. It is work, as an AWS write by key is: when it fails, or the
// message is acked before it, what the message should have stored is lost
// (a job queued in a sorted set, a task recorded in a hash).
func redisStateWrite(info *types.Info, call *ast.CallExpr) bool {
	cmd := redisCmd(info, call)
	if !redisStateCmd[cmd] || len(call.Args) == 0 {
		return false
	}
	if cmd != "Set" {
		return true
	}
	last := call.Args[len(call.Args)-1]
	tv, ok := info.Types[last]
	return ok && tv.Value != nil && tv.Value.Kind() == constant.Int && constant.Sign(tv.Value) == 0 && isNamed(tv.Type, "time", "Duration")
}

// keyedWriteDesc describes call when it is an AWS write by key (see
// keyedWriteOf), "" otherwise: work that a redelivery repeats harmlessly
// but that an early ack or a swallowed failure loses.
func keyedWriteDesc(info *types.Info, call *ast.CallExpr) string {
	if !keyedWriteOf(info, call) {
		return ""
	}
	if redisStateWrite(info, call) {
		return "a Redis write (" + qualName(callee(info, call)) + ")"
	}
	return "a write by key (" + qualName(callee(info, call)) + ")"
}

// isGRPCClientMethod matches generated gRPC client stubs: a method whose last
// parameter is ...grpc.CallOption.
func isGRPCClientMethod(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || !sig.Variadic() || sig.Params().Len() == 0 {
		return false
	}
	last, ok := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	return ok && isNamed(last.Elem(), pathGRPC, "CallOption")
}

// isOpenAPIClientMethod matches the methods of HTTP clients generated by
// oapi-codegen (github.com/oapi-codegen/oapi-codegen, deepmap before it):
// a method whose last parameter is ...RequestEditorFn. Each makes one
// HTTP request; their bodies live in the library, which the checker does
// not follow, so the signature is the mark, as ...grpc.CallOption is for
// gRPC stubs.
func isOpenAPIClientMethod(fn *types.Func) bool {
	sig := fn.Type().(*types.Signature)
	if sig.Recv() == nil || !sig.Variadic() || sig.Params().Len() == 0 {
		return false
	}
	last, ok := sig.Params().At(sig.Params().Len() - 1).Type().(*types.Slice)
	if !ok {
		return false
	}
	n, ok := types.Unalias(last.Elem()).(*types.Named)
	return ok && n.Obj().Name() == "RequestEditorFn"
}

// readName reports whether a method name starts with a read verb (see
// readVerbs): Get, List, Find, ...; or is Check or Ping, the probes of a
// health service (grpc_health_v1's Health.Check).
func readName(name string) bool {
	if name == "Check" || name == "Ping" {
		return true
	}
	for _, v := range readVerbs {
		if strings.HasPrefix(name, v) {
			return true
		}
	}
	return false
}

// dbHandle says what a database call goes through.
type dbHandle int

const (
	handleNone dbHandle = iota
	handlePool          // *sql.DB, *sql.Conn, *pgxpool.Pool
	handleTx            // *sql.Tx, pgx.Tx
	// handleIface is an application's interface with database/sql's
	// method shapes (sqlc's DBTX: ExecContext returning sql.Result,
	// QueryContext returning *sql.Rows): a pool or a transaction, which
	// one is not known at the call.
	handleIface
)

// dbCall classifies a call of Exec/Query methods on a database handle
// (database/sql, pgx, pgxpool, jmoiron/sqlx with its Named and Must forms:
// NamedExecContext, MustExec, and an application's interface with
// database/sql's method shapes, sqlc's DBTX), and
// returns the handle kind and the method name.
func dbCall(info *types.Info, call *ast.CallExpr) (dbHandle, string) {
	fn := callee(info, call)
	if fn == nil {
		return handleNone, ""
	}
	name := fn.Name()
	base := strings.TrimPrefix(strings.TrimPrefix(name, "Must"), "Named") // sqlx: MustExec, NamedExecContext
	// sqlx's Get and Select run any statement into a destination: an
	// INSERT ... RETURNING id is a write (its SQL says so).
	sqlxScan := funcPath(fn) == pathSqlx && (name == "Get" || name == "GetContext" || name == "Select" || name == "SelectContext")
	if !strings.HasPrefix(base, "Exec") && !strings.HasPrefix(base, "Query") && name != "SendBatch" && name != "CopyFrom" && !sqlxScan {
		return handleNone, ""
	}
	path, recv := funcPath(fn), recvName(fn)
	switch {
	case path == pathSqlx && (recv == "DB" || recv == "Conn"):
		return handlePool, name
	case path == pathSqlx && recv == "Tx":
		return handleTx, name
	case path == "database/sql" && (recv == "DB" || recv == "Conn"),
		isPgxpool(path) && recv == "Pool":
		// Not a *pgx.Conn or *pgxpool.Conn: once a transaction began on
		// one, its Exec runs inside that transaction.
		return handlePool, name
	case path == "database/sql" && recv == "Tx", isPgx(path) && recv == "Tx", isPgxpool(path) && recv == "Tx":
		return handleTx, name
	case path == "database/sql" && recv == "Stmt", path == pathSqlx && (recv == "Stmt" || recv == "NamedStmt"):
		// A prepared statement: of a pool or of a transaction (tx.Stmt,
		// tx.Prepare), which one is not known at the call.
		return handleIface, name
	}
	if h := wrappedHandle(fn); h != handleNone {
		return h, name
	}
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		rs := sig.Results()
		for i := range rs.Len() {
			t := rs.At(i).Type()
			sqlShape := isSQLResult(t)
			// An application's wrapper over pgx (sqlc's pgx DBTX, a
			// transaction-from-context executor): pgx's result types.
			pgxShape := isNamed(t, "github.com/jackc/pgx/v5/pgconn", "CommandTag") || isNamed(t, "github.com/jackc/pgx/v4/pgconn", "CommandTag") || isNamed(t, "github.com/jackc/pgconn", "CommandTag") ||
				isNamed(t, "github.com/jackc/pgx/v5", "Rows") || isNamed(t, "github.com/jackc/pgx/v5", "Row") || isNamed(t, "github.com/jackc/pgx/v4", "Rows") || isNamed(t, "github.com/jackc/pgx/v4", "Row")
			if types.IsInterface(sig.Recv().Type()) && (sqlShape || pgxShape) || pgxShape {
				return handleIface, name
			}
		}
	}
	return handleNone, ""
}

// isSQLResult reports whether t is database/sql's Result, *Rows or *Row.
func isSQLResult(t types.Type) bool {
	return isNamed(t, "database/sql", "Result") || isNamed(t, "database/sql", "Rows") || isNamed(t, "database/sql", "Row")
}

// wrappedHandle returns the kind of the database handle that fn's
// receiver holds, when fn is a method of an application's concrete
// wrapper over one: its SQL is the caller's, since the wrapper passes it on
// as a parameter. The handle is embedded (type Tx struct{ *sql.Tx; log
// *Logger } with its own ExecContext that logs and calls the embedded
// one), or held in a named field by a method with database/sql's shape: a
// string parameter and a Result, Rows or Row result (type Database
// struct{ conn *sql.DB } with Exec(query string, args ...any)
// (sql.Result, error); field trial wave 33, webhook-event-processor H2).
func wrappedHandle(fn *types.Func) dbHandle {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil {
		return handleNone
	}
	t := sig.Recv().Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return handleNone
	}
	sqlShape := false
	for i := range sig.Results().Len() {
		sqlShape = sqlShape || isSQLResult(sig.Results().At(i).Type())
	}
	if sqlShape {
		sqlShape = false
		for i := range sig.Params().Len() {
			if b, ok := sig.Params().At(i).Type().Underlying().(*types.Basic); ok && b.Kind() == types.String {
				sqlShape = true
			}
		}
	}
	for i := range st.NumFields() {
		f := st.Field(i)
		if !f.Embedded() && !sqlShape {
			continue
		}
		ft := f.Type()
		if p, ok := ft.(*types.Pointer); ok {
			ft = p.Elem()
		}
		n, ok := types.Unalias(ft).(*types.Named)
		if !ok || n.Obj().Pkg() == nil {
			continue
		}
		path, tn := pkgPath(n.Obj().Pkg()), n.Obj().Name()
		switch {
		case (path == "database/sql" || path == pathSqlx) && tn == "Tx", isPgx(path) && tn == "Tx":
			return handleTx
		case (path == "database/sql" || path == pathSqlx) && tn == "DB", isPgxpool(path) && tn == "Pool":
			return handlePool
		}
	}
	return handleNone
}

// sqlText returns the SQL of a database call: its first string constant
// argument, upper-cased, or "".
func sqlText(info *types.Info, call *ast.CallExpr) string {
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "Exec") {
		// stmt.Exec(args...) on a statement prepared in this function:
		// its SQL is the Prepare's (field trial, wave 52: score's user
		// INSERT).
		if id, ok := ast.Unparen(sel.X).(*ast.Ident); ok {
			if v := localString(info, id, call.Pos()); v != "" {
				return strings.ToUpper(stripSQLComments(v))
			}
		}
	}
	for _, a := range call.Args {
		if tv, ok := info.Types[a]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
			return strings.ToUpper(stripSQLComments(constant.StringVal(tv.Value)))
		}
		if f := sprintfFormat(info, a); f != "" {
			return strings.ToUpper(stripSQLComments(f))
		}
		if id, ok := ast.Unparen(a).(*ast.Ident); ok {
			if v := localString(info, id, call.Pos()); v != "" {
				return strings.ToUpper(stripSQLComments(v))
			}
		}
	}
	return ""
}

// sprintfFormat returns the constant format of e when e is a call of
// fmt.Sprintf (`fmt.Sprintf("UPDATE %s SET state = $1 WHERE id = $2",
// table)`: SQL whose table name is filled in), "" otherwise. Its verbs stay
// in the text; the statement's kind and columns are what the checks read
// (field trial, wave 31: OpenFoundry's state UPDATE was no write).
func sprintfFormat(info *types.Info, e ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return ""
	}
	if fn := callee(info, call); fn == nil || funcPath(fn) != "fmt" || fn.Name() != "Sprintf" {
		return ""
	}
	if tv, ok := info.Types[call.Args[0]]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value)
	}
	return ""
}

// strAssign is one assignment to a local string variable: where, and the
// constant it assigns ("" for anything else).
type strAssign struct {
	pos   token.Pos
	val   string
	fresh string // the random generator the value is made with (see freshRandom), any type
}

// localStrings holds, per type-checked package (by a weak pointer to its
// *types.Info, dropped when the package is), the assignments to its
// functions' local variables of string type, in source order: `query :=
// "INSERT ..."` then `db.Exec(query, ...)`.
var localStrings sync.Map // weak.Pointer[types.Info] -> map[types.Object][]strAssign

// indexLocalStrings records pass's assignments to local string variables
// for localString.
func indexLocalStrings(pass *analysis.Pass) {
	info := pass.TypesInfo
	if info == nil || len(pass.Files) == 0 {
		return // a dependency analysed for its facts only
	}
	m := map[types.Object][]strAssign{}
	add := func(lhs ast.Expr, rhs ast.Expr) {
		id, ok := lhs.(*ast.Ident)
		if !ok {
			return
		}
		obj := info.ObjectOf(id)
		v, ok := obj.(*types.Var)
		if !ok || v.Parent() == nil || v.Parent() == pass.Pkg.Scope() {
			return
		}
		if g := freshRandom(info, rhs); g != "" {
			// key := uuid.NewString(), then the key passed on (a new
			// user's report: a payout's idempotency key).
			m[obj] = append(m[obj], strAssign{pos: id.Pos(), fresh: g})
			return
		}
		if !types.Identical(v.Type().Underlying(), types.Typ[types.String]) {
			return
		}
		val := sprintfFormat(info, rhs)
		if tv, ok := info.Types[rhs]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
			val = constant.StringVal(tv.Value)
		}
		m[obj] = append(m[obj], strAssign{pos: id.Pos(), val: val})
	}
	// A query builder's variable (q := sq.Insert("t"); q = q.Values(...))
	// and the chains assigned to it, for the SQL its ToSql/Build makes.
	chains := map[types.Object][]ast.Expr{}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, l := range as.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						if _, isCall := ast.Unparen(as.Rhs[i]).(*ast.CallExpr); isCall {
							if obj := info.ObjectOf(id); obj != nil {
								chains[obj] = append(chains[obj], as.Rhs[i])
							}
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) == len(n.Rhs) {
					for i := range n.Lhs {
						add(n.Lhs[i], n.Rhs[i])
					}
				} else if len(n.Rhs) == 1 && len(n.Lhs) >= 2 {
					// query, args, err := q.ToSql(): the SQL a builder makes.
					if id, ok := n.Lhs[0].(*ast.Ident); ok {
						if v, ok := info.ObjectOf(id).(*types.Var); ok && v.Parent() != nil && v.Parent() != pass.Pkg.Scope() {
							if sql := builderSQL(info, n.Rhs[0], chains); sql != "" {
								m[v] = append(m[v], strAssign{pos: id.Pos(), val: sql})
							} else if sql := preparedSQL(info, n.Rhs[0]); sql != "" {
								m[v] = append(m[v], strAssign{pos: id.Pos(), val: sql})
							}
						}
					}
				}
			case *ast.ValueSpec:
				if len(n.Names) == len(n.Values) {
					for i := range n.Names {
						add(n.Names[i], n.Values[i])
					}
				}
			}
			return true
		})
	}
	key := weak.Make(info)
	localStrings.Store(key, m)
	runtime.AddCleanup(info, func(k weak.Pointer[types.Info]) { localStrings.Delete(k) }, key)
}

// preparedSQL returns the SQL text of e when e is a call that prepares a
// statement (database/sql's Prepare and PrepareContext, sqlx's Preparex
// and PrepareNamed), "" otherwise: `stmt, err := db.Prepare("INSERT
// ...")` gives the text a later stmt.Exec runs.
func preparedSQL(info *types.Info, e ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return ""
	}
	fn := callee(info, call)
	if fn == nil || !strings.HasPrefix(fn.Name(), "Prepare") || recvName(fn) == "" {
		return ""
	}
	for _, a := range call.Args {
		if tv, ok := info.Types[a]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
			return constant.StringVal(tv.Value)
		}
	}
	return ""
}

// builderVerbs maps the calls that start a query builder's statement
// (Masterminds/squirrel, doug-martin/goqu, stephenafamo/bob,
// huandu/go-sqlbuilder, gocraft/dbr) to the SQL they begin.
var builderVerbs = map[string]string{
	"Insert": "INSERT INTO", "InsertInto": "INSERT INTO", "Replace": "REPLACE INTO",
	"Update": "UPDATE", "Delete": "DELETE FROM", "DeleteFrom": "DELETE FROM",
}

// builderConflict matches the builder calls that make an insert an upsert
// or a skip (goqu's OnConflict, bob's im.OnConflict, go-sqlbuilder's
// Ignore, squirrel's Options("IGNORE")); squirrel's Suffix("ON CONFLICT
// ...") is read from its text.
var builderConflict = regexp.MustCompile(`^(OnConflict|OnConflictDoNothing|OnDuplicateKeyUpdate|Ignore|InsertIgnore|OnDuplicateKey)$`)

// builderSQL returns the SQL a query builder's ToSql, ToSQL, Build or
// MustBuild call makes, as far as its statement goes: "INSERT INTO t" (with
// " ON CONFLICT" when the chain adds one), "UPDATE t", "DELETE FROM t";
// "" for any other expression. The chain is read through one local
// variable it was built in (q := sq.Insert("t"); q = q.Values(...)).
func builderSQL(info *types.Info, e ast.Expr, chains map[types.Object][]ast.Expr) string {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	switch sel.Sel.Name {
	case "ToSql", "ToSQL", "Build", "MustBuild", "BuildWithFlavor":
	default:
		return ""
	}
	exprs := []ast.Expr{sel.X}
	root := sel.X
	for {
		c, ok := ast.Unparen(root).(*ast.CallExpr)
		if !ok {
			break
		}
		s, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
		if !ok {
			break
		}
		root = s.X
	}
	if id, ok := ast.Unparen(root).(*ast.Ident); ok {
		if obj := info.ObjectOf(id); obj != nil {
			exprs = append(exprs, chains[obj]...)
		}
	}
	verb, table, conflict := "", "", false
	for _, x := range exprs {
		ast.Inspect(x, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			name := lastName(c.Fun)
			if v, ok := builderVerbs[name]; ok && verb == "" {
				verb = v
				for _, a := range c.Args {
					if tv, ok := info.Types[a]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
						table = constant.StringVal(tv.Value)
					}
				}
			}
			if builderConflict.MatchString(name) {
				conflict = true
			}
			if name == "Suffix" || name == "Options" {
				for _, a := range c.Args {
					if tv, ok := info.Types[a]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
						up := strings.ToUpper(constant.StringVal(tv.Value))
						conflict = conflict || strings.Contains(up, "ON CONFLICT") || strings.Contains(up, "ON DUPLICATE") || strings.Contains(up, "IGNORE")
					}
				}
			}
			return true
		})
	}
	if verb == "" {
		return ""
	}
	sql := verb + " " + cmp.Or(table, "t")
	if verb == "UPDATE" {
		sql += " SET"
	}
	if conflict {
		sql += " ON CONFLICT"
	}
	return sql
}

// localString returns the string constant last assigned to the local
// variable id before at (in source order), "" if it is not one.
func localString(info *types.Info, id *ast.Ident, at token.Pos) string {
	return lastLocal(info, id, at).val
}

// localFresh returns the random generator the value of the local variable
// id holds at position at was made with (`key := uuid.NewString()`), ""
// when its last assignment before at made no fresh value.
func localFresh(info *types.Info, id *ast.Ident, at token.Pos) string {
	return lastLocal(info, id, at).fresh
}

// lastLocal returns the last recorded assignment to the local variable id
// before at (see indexLocalStrings).
func lastLocal(info *types.Info, id *ast.Ident, at token.Pos) strAssign {
	var last strAssign
	if info == nil {
		return last
	}
	mv, ok := localStrings.Load(weak.Make(info))
	if !ok {
		return last
	}
	for _, a := range mv.(map[types.Object][]strAssign)[info.Uses[id]] {
		if a.pos < at {
			last = a
		}
	}
	return last
}

// stripSQLComments drops the leading comment lines of a statement (sqlc
// writes "-- name: CreateEmailLog :exec" above each query) and leading
// /* */ blocks.
func stripSQLComments(sql string) string {
	for {
		sql = strings.TrimSpace(sql)
		switch {
		case strings.HasPrefix(sql, "--"):
			_, rest, ok := strings.Cut(sql, "\n")
			if !ok {
				return ""
			}
			sql = rest
		case strings.HasPrefix(sql, "/*"):
			_, rest, ok := strings.Cut(sql, "*/")
			if !ok {
				return ""
			}
			sql = rest
		default:
			return sql
		}
	}
}

// isWriteSQL reports whether a statement changes rows.
func isWriteSQL(sql string) bool {
	s := strings.TrimSpace(sql)
	for _, kw := range []string{"INSERT", "UPDATE", "DELETE", "UPSERT", "MERGE", "REPLACE"} {
		if strings.HasPrefix(s, kw) {
			return true
		}
	}
	return strings.HasPrefix(s, "WITH") && (strings.Contains(s, "INSERT") || strings.Contains(s, "UPDATE") || strings.Contains(s, "DELETE"))
}

// mongoWrites are the MongoDB Collection methods that change documents.
var mongoWrites = map[string]bool{
	"InsertOne": true, "InsertMany": true, "UpdateOne": true, "UpdateMany": true, "UpdateByID": true,
	"ReplaceOne": true, "DeleteOne": true, "DeleteMany": true, "BulkWrite": true,
	"FindOneAndUpdate": true, "FindOneAndReplace": true, "FindOneAndDelete": true,
}

// goZeroMongoWrite reports whether fn is a write of go-zero's MongoDB
// clients: core/stores/mon's Model (whose methods are its Collection
// interface's, the driver's with a circuit breaker) and the cached
// core/stores/monc Model, whose writes also drop a cache key (field
// trial, wave 37: easy-chat's chat log and conversation models).
func goZeroMongoWrite(fn *types.Func) bool {
	path := funcPath(fn)
	if path != pathGoZero+"/core/stores/mon" && path != pathGoZero+"/core/stores/monc" {
		return false
	}
	name := strings.TrimSuffix(fn.Name(), "NoCache")
	return mongoWrites[name]
}

// pathGormGen is gorm.io/gen, whose generated query types embed gen.DO and
// call its methods (q.Order.WithContext(ctx).Create(o) calls DO.Create).
const pathGormGen = "gorm.io/gen"

// gormGenWrites are the methods of gorm.io/gen's DO, and of the query
// types it generates, that write rows (field trial, wave 38:
// seckill-service's order and stock writes).
var gormGenWrites = map[string]bool{
	"Create": true, "CreateInBatches": true, "Save": true, "Update": true, "Updates": true, "UpdateSimple": true,
	"UpdateColumn": true, "UpdateColumns": true, "UpdateColumnSimple": true, "UpdateFrom": true, "Delete": true,
	"FirstOrCreate": true,
}

// genDAO reports whether fn is a method of a query type gorm.io/gen
// generated (its package imports gorm.io/gen: q.Order.WithContext(ctx)
// returns an IOrderDo whose Create calls gen.DO's), or of gen.DO itself.
// The write is recognised at the consumer's own call, not inside the
// generated file.
func genDAO(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || fn.Pkg() == nil {
		return false
	}
	if fn.Pkg().Path() == pathGormGen {
		return recvName(fn) == "DO"
	}
	for _, imp := range fn.Pkg().Imports() {
		if imp.Path() == pathGormGen {
			return true
		}
	}
	return false
}

// gormWrites are the methods of gorm's *DB (gorm.io/gorm, and v1's
// github.com/jinzhu/gorm) that write rows; the chain builders (Model,
// Where, Table) and the reads (Find, First, Take, Count) are not.
var gormWrites = map[string]bool{
	"Create": true, "CreateInBatches": true, "Save": true, "Update": true, "Updates": true,
	"UpdateColumn": true, "UpdateColumns": true, "Delete": true, "Exec": true, "FirstOrCreate": true,
}

// dbWriteOf returns a description if call writes rows (through any handle):
// an Exec, a Query whose SQL is a write, or a MongoDB write.
func dbWriteOf(info *types.Info, call *ast.CallExpr) string {
	if fn := callee(info, call); fn != nil && (strings.HasPrefix(funcPath(fn), "go.mongodb.org/mongo-driver") || strings.HasPrefix(funcPath(fn), "github.com/mongodb/mongo-go-driver")) && recvName(fn) == "Collection" && mongoWrites[fn.Name()] {
		return "a MongoDB write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && funcPath(fn) == "github.com/qiniu/qmgo" && recvName(fn) == "Collection" && (mongoWrites[fn.Name()] || fn.Name() == "Upsert" || fn.Name() == "UpsertId" || fn.Name() == "UpdateId" || fn.Name() == "UpdateAll" || fn.Name() == "Remove" || fn.Name() == "RemoveId" || fn.Name() == "RemoveAll") {
		return "a MongoDB write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && genDAO(fn) && funcPath(fn) != pathGormGen && gormGenWrites[fn.Name()] {
		return "a database write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && goZeroMongoWrite(fn) {
		return "a MongoDB write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && (funcPath(fn) == "gorm.io/gorm" || funcPath(fn) == "github.com/jinzhu/gorm") && recvName(fn) == "DB" && gormWrites[fn.Name()] {
		return "a database write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && entCreate(fn) {
		return "a database write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && bunWrite(fn) {
		return "a database write (" + qualName(fn) + ")"
	}
	if fn := callee(info, call); fn != nil && (funcPath(fn) == "database/sql" && recvName(fn) == "Stmt" || funcPath(fn) == pathSqlx && (recvName(fn) == "Stmt" || recvName(fn) == "NamedStmt")) && strings.Contains(fn.Name(), "Exec") {
		// A prepared statement: its SQL is where it was prepared; an Exec
		// changes rows (a SELECT is run with Query).
		return "a database write (" + qualName(fn) + ")"
	}
	h, name := dbCall(info, call)
	if h == handleNone {
		return ""
	}
	if strings.Contains(name, "Exec") || name == "SendBatch" || name == "CopyFrom" || isWriteSQL(sqlText(info, call)) {
		return "a database write (" + qualName(callee(info, call)) + ")"
	}
	return ""
}

// pathBun is uptrace/bun, an SQL-first ORM.
const pathBun = "github.com/uptrace/bun"

// bunWrite reports whether fn runs a bun insert, update or delete query
// (db.NewInsert().Model(&m).Exec(ctx)).
func bunWrite(fn *types.Func) bool {
	if funcPath(fn) != pathBun || fn.Name() != "Exec" {
		return false
	}
	switch recvName(fn) {
	case "InsertQuery", "UpdateQuery", "DeleteQuery":
		return true
	}
	return false
}

// outboxOf returns a description if call writes outbox rows through
// ackgap's handler API (AddOutbox, AddOutboxMany, or ApplyTransition given
// rows): each row is an effect the relay makes after the commit, with the
// row's idempotency key. "" otherwise (ApplyTransition without rows is a
// guarded write only).
func outboxOf(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil || funcPath(fn) != pathAckgap || recvName(fn) != "" {
		return ""
	}
	switch fn.Name() {
	case "AddOutbox", "AddOutboxMany":
	case "ApplyTransition":
		if len(call.Args) < 3 && !call.Ellipsis.IsValid() {
			return ""
		}
	default:
		return ""
	}
	return "an outbox row (" + qualName(fn) + "), made by the relay after the commit with the row's idempotency key"
}

// ackOf classifies a call that tells the broker a message is done: an offset
// mark or commit, an SQS delete, a Watermill Ack. It returns a description.
func ackOf(info *types.Info, call *ast.CallExpr) string {
	fn := callee(info, call)
	if fn == nil {
		return ""
	}
	path, recv, name := funcPath(fn), recvName(fn), fn.Name()
	if isGoRedis(path) && strings.HasSuffix(recv, "Cmd") && (name == "Err" || name == "Result" || name == "Val") {
		// rdb.XAck(ctx, ...).Err(): the command's reply read for its error.
		if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok {
			if inner, ok := ast.Unparen(sel.X).(*ast.CallExpr); ok {
				return ackOf(info, inner)
			}
		}
		return ""
	}
	switch {
	case isSaramaPath(path) && (name == "MarkMessage" || name == "MarkOffset" || name == "Commit"),
		path == pathKgo && recv == "Client" && strings.HasPrefix(name, "Commit") || path == pathKgo && recv == "Client" && strings.HasPrefix(name, "MarkCommit"),
		path == pathKafkaGo && recv == "Reader" && name == "CommitMessages",
		strings.HasPrefix(path, pathWatermill) && recv == "Message" && name == "Ack":
		return qualName(fn)
	}
	return ackOfMore(fn)
}

// txParam returns the name of a parameter of a database transaction type
// (*sql.Tx, pgx.Tx), or "".
func txParam(info *types.Info, ft *ast.FuncType) string {
	if ft == nil || ft.Params == nil {
		return ""
	}
	for _, f := range ft.Params.List {
		t := info.TypeOf(f.Type)
		if t == nil || !isTxType(t) {
			continue
		}
		for _, n := range f.Names {
			if n.Name != "_" {
				return n.Name
			}
		}
	}
	return ""
}

func isTxType(t types.Type) bool {
	return isNamed(t, "database/sql", "Tx") || isNamed(t, "github.com/jackc/pgx/v5", "Tx") || isNamed(t, "github.com/jackc/pgx/v4", "Tx") || isNamed(t, pathSqlx, "Tx")
}

// ctxParam returns the name of a context.Context parameter, or "".
func ctxParam(info *types.Info, ft *ast.FuncType) string {
	if ft == nil || ft.Params == nil {
		return ""
	}
	for _, f := range ft.Params.List {
		if t := info.TypeOf(f.Type); t != nil && isNamed(t, "context", "Context") {
			for _, n := range f.Names {
				if n.Name != "_" {
					return n.Name
				}
			}
		}
	}
	return ""
}

// funcType returns the signature syntax of a FuncDecl or FuncLit.
func funcType(n ast.Node) *ast.FuncType {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Type
	case *ast.FuncLit:
		return n.Type
	}
	return nil
}

// funcBody returns the body of a FuncDecl or FuncLit.
func funcBody(n ast.Node) *ast.BlockStmt {
	switch n := n.(type) {
	case *ast.FuncDecl:
		return n.Body
	case *ast.FuncLit:
		return n.Body
	}
	return nil
}

// referencedFunc returns the function or method an identifier, selector
// (pkg.F, value.Method) or generic instantiation refers to, wherever it is
// declared; nil for anything else.
func referencedFunc(info *types.Info, e ast.Expr) *types.Func {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		fn, _ := info.Uses[e].(*types.Func)
		return fn
	case *ast.SelectorExpr:
		fn, _ := info.Uses[e.Sel].(*types.Func)
		return fn
	case *ast.IndexExpr:
		return referencedFunc(info, e.X)
	}
	return nil
}

// usedFunc returns the package-local function an identifier or selector
// refers to, if pass declares it.
func usedFunc(pass *analysis.Pass, e ast.Expr) *types.Func {
	var id *ast.Ident
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		id = e
	case *ast.SelectorExpr:
		id = e.Sel
	case *ast.IndexExpr: // generic instantiation
		return usedFunc(pass, e.X)
	default:
		return nil
	}
	fn, _ := pass.TypesInfo.Uses[id].(*types.Func)
	if fn == nil || fn.Pkg() != pass.Pkg {
		return nil
	}
	return fn.Origin()
}
