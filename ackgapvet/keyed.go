package ackgapvet

import (
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"regexp"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// harmfulRepeat reports whether an effect call (d its description), in a
// function whose body is body, does harm when a redelivery repeats it: not
// a request of an idempotent method (GET, HEAD, PUT, DELETE), not a call that carries an idempotency key the receiver
// dedupes by, not a publish through a publisher made from a transaction
// (an outbox), not a publish to a dead-letter or error topic (fname, the
// function making the call, and the call's text name it: a second record of
// one failure is noise, not harm). The effect check and the functions'
// summaries (facts) both ask it, so the two modes agree.
func harmfulRepeat(pass *analysis.Pass, fname string, body *ast.BlockStmt, call *ast.CallExpr, d string) bool {
	sends := strings.Contains(d, "publish")
	if cf := callee(pass.TypesInfo, call); cf != nil && (sqsOp(cf) == "SendMessage" || sqsOp(cf) == "SendMessageBatch") {
		sends = true // an SQS send is a publish too
	}
	if sends && (deadLetterPublish(pass.TypesInfo, fname, call) || deadLetterTopic.MatchString(pass.Pkg.Name())) {
		return false // in a package of its own for dead letters, too
	}
	if cf := callee(pass.TypesInfo, call); cf != nil && funcPath(cf) == "net/http" && cf.Name() == "Do" {
		if safeRequest(pass.TypesInfo, body, call) {
			return false
		}
		if rc := requestMade(pass.TypesInfo, body, call); rc != nil && tokenRequest(pass.TypesInfo, body, rc) {
			return false // an OAuth token fetch
		}
	}
	if strings.Contains(d, "HTTP request") && queryRequest(pass.TypesInfo, fname, body, call) {
		return false // a POST that asks (validate, predict, search): it changes nothing
	}
	if keyedCall(pass, body, call) {
		return false
	}
	if cf := callee(pass.TypesInfo, call); cf != nil && funcPath(cf) == "net/http" && cf.Name() == "Do" && len(call.Args) == 1 && keyedByCallers(pass, body, call.Args[0], 2) {
		return false // the request is keyed, or made with a safe method, by every caller
	}
	if conditionalWrite(pass, body, call) {
		return false // a DynamoDB write under a condition: a guarded transition
	}
	if sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr); ok && strings.Contains(d, "publish") && builtOverTx(pass.TypesInfo, body, sel.X, 4) {
		return false
	}
	return true
}

// deadLetterTopic matches the names of dead-letter, retry and error topics
// and of the functions and publishers that write to them.
var deadLetterTopic = regexp.MustCompile(`(?i)dlq|dead.?letter|retry|redrive|parking|quarantine|poison|error.?(topic|queue|message)`)

// deadLetterDest matches the name of a variable or field holding a
// dead-letter, error or retry destination: a queue, topic, URL, subject or
// stream named for one.
var deadLetterDest = regexp.MustCompile(`(?i)(dlq|dead.?letter|error|retry|parking|poison).*(queue|topic|url|subject|stream)`)

// deadLetterPublish reports whether a publish goes to a dead-letter or error
// topic: the function making it, the publisher it is called on, a string
// constant among its arguments, or an argument's variable or field (see
// deadLetterDest) is named like one.
func deadLetterPublish(info *types.Info, fname string, call *ast.CallExpr) bool {
	names := append([]string{fname, types.ExprString(call.Fun)}, constStrings(info, call)...)
	for _, a := range call.Args {
		// A destination read from configuration: cfg.AwsErrorQueueUrl,
		// &sqs.SendMessageInput{QueueUrl: conf.DLQURL} (field trial, wave
		// 41: wecredit's error queue).
		ast.Inspect(a, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && deadLetterDest.MatchString(lastName(e)) {
				names = append(names, lastName(e))
			}
			return true
		})
	}
	for _, n := range names {
		if deadLetterTopic.MatchString(n) {
			return true
		}
	}
	return false
}

// keyedCall reports whether an effect call carries an idempotency key that
// is not made afresh: among its arguments (and the values of the local
// variables passed as them, assigned in body), a field or header named like
// an idempotency or deduplication key (see idemKeyName) set to something
// other than a fresh random value, a helper named like one given such a
// value (Watermill's NewMessageHeaderWithIdempotencyKey(event.Header.
// IdempotencyKey) in the go-event-driven style), or the key read from the
// incoming message (msg.IdempotencyKey). The receiver dedupes the repeat,
// so the effect is not reported; a fresh key is reported by idemkey.
func keyedCall(pass *analysis.Pass, body *ast.BlockStmt, call *ast.CallExpr) bool {
	info := pass.TypesInfo
	keyed := false
	var visit func(e ast.Expr, depth int)
	visit = func(e ast.Expr, depth int) {
		ast.Inspect(e, func(n ast.Node) bool {
			if keyed {
				return false
			}
			switch n := n.(type) {
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && idemKeyName.MatchString(k.Name) && freshRandom(info, n.Value) == "" {
					keyed = true
				}
				if _, copied := ast.Unparen(n.Value).(*ast.SelectorExpr); copied && carriesKeyField(info.TypeOf(n.Value)) {
					// Header: cmd.Header, a header copied from another
					// message with its idempotency key (field trial, wave
					// 47: tickets' TicketRefunded_v1{Header: cmd.Header}).
					keyed = true
				}
			case *ast.CallExpr:
				name := ""
				if cf := callee(info, n); cf != nil {
					name = cf.Name()
				}
				if strings.Contains(name, "Idempoten") || strings.Contains(name, "Dedup") {
					if len(n.Args) > 0 && freshRandom(info, n) == "" {
						keyed = true
					}
				}
				if (name == "Set" || name == "Add") && len(n.Args) == 2 {
					if k := stringValue(info, n.Args[0]); idemKeyName.MatchString(k) && freshRandom(info, n.Args[1]) == "" {
						keyed = true
					}
				}
			case *ast.SelectorExpr:
				if idemKeyName.MatchString(n.Sel.Name) {
					if _, isField := info.Uses[n.Sel].(*types.Var); isField {
						keyed = true
					}
				}
			case *ast.Ident:
				if depth > 0 && body != nil {
					if v, ok := info.Uses[n].(*types.Var); ok {
						for _, val := range assignedValues(info, body, v) {
							visit(val, depth-1)
						}
						for _, set := range keySetsOn(info, body, v) {
							visit(set, depth-1)
						}
					}
				}
			}
			return !keyed
		})
	}
	for _, a := range call.Args {
		visit(a, 2)
	}
	return keyed
}

// carriesKeyField reports whether t is a struct, or a pointer to one,
// with a field named like an idempotency or deduplication key (see
// idemKeyName).
func carriesKeyField(t types.Type) bool { return fieldNamed(t, idemKeyName.MatchString) }

// assignedValues returns the expressions assigned to v in body (v := e,
// v = e, var v = e; for v, err := f() the call).
func assignedValues(info *types.Info, body *ast.BlockStmt, v *types.Var) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); ok && info.ObjectOf(id) == v {
					if len(n.Rhs) == len(n.Lhs) {
						out = append(out, n.Rhs[i])
					} else if len(n.Rhs) == 1 { // v, err := f(...)
						out = append(out, n.Rhs[0])
					}
				}
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if info.ObjectOf(id) == v && i < len(n.Values) {
					out = append(out, n.Values[i])
				}
			}
		}
		return true
	})
	return out
}

// keySetsOn returns the calls in body that set a header or field on v
// (v.Header.Set(...), v.Metadata.Set(...)): where a request or message
// gets its key after it was made.
func keySetsOn(info *types.Info, body *ast.BlockStmt, v *types.Var) []ast.Expr {
	var out []ast.Expr
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Set" && sel.Sel.Name != "Add") {
			return true
		}
		x := sel.X
		for {
			s, ok := ast.Unparen(x).(*ast.SelectorExpr)
			if !ok {
				break
			}
			x = s.X
		}
		if id, ok := ast.Unparen(x).(*ast.Ident); ok && info.Uses[id] == v {
			out = append(out, call)
		}
		return true
	})
	return out
}

// isNamedTx matches a transaction type of another database library by its
// name (sqlx.Tx, gorm's *DB is not one): a named type Tx.
func isNamedTx(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Name() == "Tx"
}

// builtOverTx reports whether e (a publisher or bus a publish is called on)
// is a local variable made from a database transaction: v := f(..., tx, ...)
// or through one more constructor (bus := cqrs.NewEventBus(f(tx))). A
// publisher over a transaction writes the message into that transaction:
// an outbox, not a publish.
func builtOverTx(info *types.Info, body *ast.BlockStmt, e ast.Expr, depth int) bool {
	if t := info.TypeOf(e); t != nil && (isTxType(t) || isNamedTx(t)) {
		return true
	}
	if body == nil || depth <= 0 {
		return false
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		v, ok := info.Uses[e].(*types.Var)
		if !ok {
			return false
		}
		for _, val := range assignedValues(info, body, v) {
			if builtOverTx(info, body, val, depth-1) {
				return true
			}
		}
	case *ast.CallExpr:
		for _, a := range e.Args {
			if builtOverTx(info, body, a, depth-1) {
				return true
			}
		}
	case *ast.CompositeLit:
		for _, el := range e.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && builtOverTx(info, body, kv.Value, depth-1) {
				return true
			}
		}
	case *ast.UnaryExpr:
		return builtOverTx(info, body, e.X, depth)
	}
	return false
}

// safeRequest reports whether the request a Client.Do call sends was made
// in body by http.NewRequest or NewRequestWithContext with a constant
// idempotent method (see idempotentMethod: GET, HEAD, OPTIONS, PUT,
// DELETE, or their http.Method constants), which a redelivery repeats
// without changing what the first made (RFC 9110, 9.2.1 and 9.2.2).
func safeRequest(info *types.Info, body *ast.BlockStmt, call *ast.CallExpr) bool {
	vals := requestValues(info, body, call)
	if len(vals) == 0 {
		return false
	}
	for _, val := range vals {
		rc, ok := ast.Unparen(val).(*ast.CallExpr)
		if !ok {
			return false
		}
		method := newRequestArg(info, rc, 0)
		if method == nil {
			return false
		}
		if !idempotentMethod[strings.ToUpper(stringValue(info, method))] {
			return false
		}
	}
	return true
}

// idempotentMethod names the HTTP methods a repeat of which leaves the
// state the first request made (RFC 9110, 9.2.2): the safe GET, HEAD and
// OPTIONS, and PUT and DELETE, which set or remove the target's whole
// state. POST and PATCH are not.
var idempotentMethod = map[string]bool{"GET": true, "HEAD": true, "OPTIONS": true, "PUT": true, "DELETE": true}

// newRequestArg returns argument i (0 the method, 1 the URL, 2 the body)
// of a call to http.NewRequest or NewRequestWithContext, counted after the
// context; nil for any other call.
func newRequestArg(info *types.Info, call *ast.CallExpr, i int) ast.Expr {
	fn := callee(info, call)
	if fn == nil || funcPath(fn) != "net/http" || (fn.Name() != "NewRequest" && fn.Name() != "NewRequestWithContext") {
		return nil
	}
	if fn.Name() == "NewRequestWithContext" {
		i++
	}
	if len(call.Args) <= i {
		return nil
	}
	return call.Args[i]
}

// tokenEndpoint matches the path of an OAuth 2.0 token endpoint (RFC 6749,
// 3.2): ".../oauth2/v2.0/token", "/connect/token", "/oauth/token", and of
// GitHub's App installation token endpoint ("/app/installations/{id}/
// access_tokens", docs.github.com REST "Create an installation access
// token for an app"), which issues a fresh token each time as well.
var tokenEndpoint = regexp.MustCompile(`(?i)/oauth2?(/|$)|/token/?$|/connect/token|/access_tokens/?$`)

// tokenRequest reports whether req, a call to http.NewRequest or
// NewRequestWithContext in body, asks an OAuth 2.0 token endpoint for an
// access token: its URL holds a string constant naming the endpoint
// (directly, or through a local variable assigned in body), or body builds
// the token request's form (a "grant_type" parameter: RFC 6749, 4.4.2),
// whatever URL it posts to (one read from a discovery document). A token
// request changes nothing at the provider that a repeat would double (RFC
// 6749, 4.4: the client-credentials grant issues a fresh token each time),
// so neither effect nor idemkey reports it.
func tokenRequest(info *types.Info, body *ast.BlockStmt, req *ast.CallExpr) bool {
	if grantForm(info, body) {
		return true
	}
	return urlNames(info, body, newRequestArg(info, req, 1), tokenEndpoint)
}

// queryVerb matches the names of functions that ask a service a question
// rather than tell it to do something: a POST is often how a validation,
// a model's prediction, a search or a quote is sent (a body too large or
// too structured for a query string), and a repeat of it changes nothing
// (field trials, waves 19 and 20: a fraud model's /predict, a user
// service's ValidateUser), and so do the read verbs (Get, List, Find,
// Fetch, Retrieve, Describe, Read).
var queryVerb = regexp.MustCompile(`^(Get|List|Find|Fetch|Retrieve|Describe|Read|Validate|Verify|Predict|Estimate|Quote|Lookup|Search|Query|Simulate|Preview|Classify|Evaluate|Score)([A-Z_0-9]|$)`)

// queryEndpoint matches a URL path whose last segment names such a
// question (".../fraud-ml/predict", "/users/validate", "/search").
var queryEndpoint = regexp.MustCompile(`(?i)/(validate|validation|verify|predict|prediction|estimate|quote|lookup|search|query|simulate|preview|classify|evaluate|score|scoring)/?(\?|$)`)

// queryRequest reports whether an HTTP request (a Client.Do of a request
// made in body, or a Post or PostForm) asks a question rather than makes
// a change: the function sending it is named for one (ValidateUser,
// PredictFraud, GetQuote), or its URL holds a constant path naming one
// (see queryEndpoint).
func queryRequest(info *types.Info, fname string, body *ast.BlockStmt, call *ast.CallExpr) bool {
	// A receive loop's read verb names its receive (ReadShard, FetchLoop),
	// not the request it makes per message.
	if queryVerb.MatchString(fname) && !receivesIn(info, body) {
		return true
	}
	fn := callee(info, call)
	if fn == nil || funcPath(fn) != "net/http" {
		return false
	}
	switch fn.Name() {
	case "Do":
		if rc := requestMade(info, body, call); rc != nil {
			return urlNames(info, body, newRequestArg(info, rc, 1), queryEndpoint)
		}
	case "Post", "PostForm":
		if len(call.Args) > 0 {
			return urlNames(info, body, call.Args[0], queryEndpoint)
		}
	}
	return false
}

// urlNames reports whether the URL expression u holds a string constant
// that re matches, directly or through a local variable assigned in body.
func urlNames(info *types.Info, body *ast.BlockStmt, u ast.Expr, re *regexp.Regexp) bool {
	if u == nil {
		return false
	}
	exprs := []ast.Expr{u}
	ast.Inspect(u, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && body != nil {
			if v, ok := info.Uses[id].(*types.Var); ok {
				exprs = append(exprs, assignedValues(info, body, v)...)
			}
		}
		return true
	})
	for _, e := range exprs {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			if x, ok := n.(ast.Expr); ok {
				if tv, ok := info.Types[x]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
					found = found || re.MatchString(constant.StringVal(tv.Value))
					return false
				}
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// grantForm reports whether body names the OAuth 2.0 "grant_type" form
// parameter in a string constant ("grant_type", or a body holding
// "grant_type="): a function building a token request.
func grantForm(info *types.Info, body *ast.BlockStmt) bool {
	if body == nil {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if tv, ok := info.Types[lit]; ok && tv.Value != nil {
				v := constant.StringVal(tv.Value)
				found = v == "grant_type" || strings.Contains(v, "grant_type=")
			}
		}
		return !found
	})
	return found
}

// requestValues returns the values body assigns to the local variable that
// a Client.Do call sends (its one argument), or nil.
func requestValues(info *types.Info, body *ast.BlockStmt, do *ast.CallExpr) []ast.Expr {
	if body == nil || len(do.Args) != 1 {
		return nil
	}
	id, ok := ast.Unparen(do.Args[0]).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	return assignedValues(info, body, v)
}

// requestMade returns the http.NewRequest call that made the request a
// Client.Do call sends, when body assigns it once; nil otherwise.
func requestMade(info *types.Info, body *ast.BlockStmt, do *ast.CallExpr) *ast.CallExpr {
	vals := requestValues(info, body, do)
	if len(vals) != 1 {
		return nil
	}
	rc, _ := ast.Unparen(vals[0]).(*ast.CallExpr)
	return rc
}

// conditionalWrite reports whether call is a DynamoDB write (aws-sdk-go v1
// or v2, or the application's interface over either) in a function that
// handles ConditionalCheckFailedException: the write carries a
// ConditionExpression, so a repeat fails the condition instead of applying
// again (DynamoDB's form of a guarded transition; the Developer Guide,
// "Condition expressions").
//
// The condition's failure may be handled elsewhere in the package (a
// repository turns it into ErrAlreadyClaimed for its caller): a write whose
// input sets a ConditionExpression, in a package that names
// ConditionalCheckFailed, is one too (field trial, wave 20: bolt-monitor's
// claims).
func conditionalWrite(pass *analysis.Pass, body *ast.BlockStmt, call *ast.CallExpr) bool {
	info := pass.TypesInfo
	fn := callee(info, call)
	if body == nil || fn == nil {
		return false
	}
	op := awsV1Op(fn.Name())
	if op != "UpdateItem" && op != "PutItem" && op != "DeleteItem" && op != "TransactWriteItems" {
		return false
	}
	if !strings.Contains(funcPath(fn), "dynamodb") && !strings.Contains(types.TypeString(fn.Type(), nil), "dynamodb") {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			found = found || strings.HasPrefix(n.Name, "ConditionalCheckFailed") || n.Name == "ErrCodeConditionalCheckFailedException"
		case *ast.BasicLit:
			found = found || n.Kind == token.STRING && strings.Contains(n.Value, "ConditionalCheckFailed")
		}
		return !found
	})
	return found || setsCondition(body) && packageNames(pass, "ConditionalCheckFailed")
}

// setsCondition reports whether body sets a ConditionExpression field in
// a composite literal (the write's input).
func setsCondition(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok {
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "ConditionExpression" {
				found = true
			}
		}
		return !found
	})
	return found
}

// packageNames reports whether an identifier or a string literal of the
// package's files contains s.
func packageNames(pass *analysis.Pass, s string) bool {
	found := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Ident:
				found = found || strings.Contains(n.Name, s)
			case *ast.BasicLit:
				found = found || n.Kind == token.STRING && strings.Contains(n.Value, s)
			}
			return !found
		})
		if found {
			return true
		}
	}
	return false
}

// keyedByCallers reports whether req, the request an HTTP Do in body
// sends, is a parameter of the function whose body that is (directly, or
// through req.WithContext(ctx) or req.Clone(ctx)), and every call of that
// function in the package passes a request that carries an idempotency
// key (see keyedCall) or is made with an idempotent method (see
// safeRequest), in the caller or, up to depth functions up, in its own
// callers: a client whose post sets the Idempotency-Key header and hands
// the request to a traced helper that calls do (field trial, wave 44:
// payment-orchestration's simclient). False when the function has no
// caller in the package.
func keyedByCallers(pass *analysis.Pass, body *ast.BlockStmt, req ast.Expr, depth int) bool {
	calls := paramCallers(pass, body, req)
	if depth == 0 || len(calls) == 0 {
		return false
	}
	for _, pc := range calls {
		do := &ast.CallExpr{Fun: pc.call.Fun, Args: []ast.Expr{pc.arg}}
		if !keyedCall(pass, pc.body, do) && !safeRequest(pass.TypesInfo, pc.body, do) && !keyedByCallers(pass, pc.body, pc.arg, depth-1) {
			return false
		}
	}
	return true
}

// paramCall is a call of a function with the argument it passes for one
// of its parameters, and the body of the function making the call.
type paramCall struct {
	call   *ast.CallExpr
	arg    ast.Expr
	body   *ast.BlockStmt
	caller string // the calling function's name
	decl   *ast.FuncDecl
}

// paramCallers returns, when e (through method calls on it such as
// req.WithContext(ctx)) is a parameter of the function declared with body
// in the pass's files, every call of that function in those files with
// the argument it passes for the parameter; nil otherwise, or when a
// call passes it spread (f(args...)).
func paramCallers(pass *analysis.Pass, body *ast.BlockStmt, e ast.Expr) []paramCall {
	info := pass.TypesInfo
	for {
		c, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			break
		}
		sel, ok := ast.Unparen(c.Fun).(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "WithContext" && sel.Sel.Name != "Clone") {
			return nil
		}
		e = sel.X
	}
	id, ok := ast.Unparen(e).(*ast.Ident)
	if !ok {
		return nil
	}
	v, ok := info.Uses[id].(*types.Var)
	if !ok {
		return nil
	}
	var fn *types.Func
	index := -1
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body != body {
				continue
			}
			fn, _ = info.Defs[fd.Name].(*types.Func)
		}
	}
	if fn == nil {
		return nil
	}
	sig := fn.Type().(*types.Signature)
	for i := range sig.Params().Len() {
		if sig.Params().At(i) == v {
			index = i
		}
	}
	if index < 0 {
		return nil
	}
	var out []paramCall
	for _, f := range pass.Files {
		var decl *ast.FuncDecl
		ast.Inspect(f, func(n ast.Node) bool {
			if n == nil {
				return false
			}
			switch n := n.(type) {
			case *ast.FuncDecl:
				decl = n
			case *ast.CallExpr:
				if cf := callee(info, n); cf != nil && cf.Origin() == fn && index < len(n.Args) && !n.Ellipsis.IsValid() && decl != nil && decl.Body != nil {
					out = append(out, paramCall{call: n, arg: n.Args[index], body: decl.Body, caller: decl.Name.Name, decl: decl})
				}
			}
			return true
		})
	}
	return out
}

// freshFromCallers describes the fresh random value (see freshRandom)
// that a caller in the package on a consumer's path (onPath) passes for
// the parameter e names, up to depth functions up: `c.charge(ctx, ch,
// uuid.NewString())` into a charge that sets the Idempotency-Key header
// from its parameter (a new user's report). "" when no such caller does.
func freshFromCallers(pass *analysis.Pass, body *ast.BlockStmt, e ast.Expr, depth int, onPath func(ast.Node) bool) (string, *paramCall) {
	if depth == 0 || body == nil {
		return "", nil
	}
	for _, pc := range paramCallers(pass, body, e) {
		if !onPath(pc.decl) {
			continue
		}
		if g := freshRandom(pass.TypesInfo, pc.arg); g != "" {
			return g + ", passed by " + pc.caller, &pc
		}
		if g, at := freshFromCallers(pass, pc.body, pc.arg, depth-1, onPath); g != "" {
			return g, at
		}
	}
	return "", nil
}
