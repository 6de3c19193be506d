package ackgapvet

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/types"
	"maps"
	"reflect"
	"slices"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// Root kinds: what made a function a consumer entry point.
const (
	KindWatermill = "watermill handler"
	KindAckgap    = "ackgap handler"
	KindSarama    = "Sarama ConsumeClaim"
	KindFranz     = "franz-go poll loop"
	KindKafkaGo   = "kafka-go reader loop"
	KindSQS       = "SQS receive loop"
	KindLambda    = "Lambda SQS handler"
	// KindLambdaKinesis, KindLambdaKafka and KindLambdaDynamoDB are
	// aws-lambda-go handlers taking events.KinesisEvent, events.KafkaEvent
	// (MSK, self-managed Kafka) or events.DynamoDBEvent (DynamoDB Streams):
	// Lambda moves past the batch when the handler returns nil, and retries
	// it (or bisects it) when the handler fails.
	KindLambdaKinesis  = "Lambda Kinesis handler"
	KindLambdaKafka    = "Lambda Kafka handler"
	KindLambdaDynamoDB = "Lambda DynamoDB Streams handler"
)

// lambdaEvents maps the aws-lambda-go event types of queue and stream
// sources to the root kind of a handler that takes one.
var lambdaEvents = map[string]string{"SQSEvent": KindLambda, "KinesisEvent": KindLambdaKinesis, "KafkaEvent": KindLambdaKafka, "DynamoDBEvent": KindLambdaDynamoDB}

// Root is a consumer entry point: a handler or a receive loop.
type Root struct {
	// Kind says what kind of entry point it is (KindWatermill, ...).
	Kind string
	// Name is the function's name, or "func literal".
	Name string
	// Node is the *ast.FuncDecl or *ast.FuncLit.
	Node ast.Node
	// wrapper marks a declared function that receives once and returns
	// what it received, with no caller in its own package: the
	// whole-program mode looks for the loops that call it in other
	// packages (see buildProgram).
	wrapper bool
	// lifted marks the loop that calls such a wrapper: it takes messages
	// from the broker through the wrapper, so it is a receive loop of its
	// own even when another consumer's walk reaches it (see consumerMap).
	lifted bool
}

// Summary is what a function does that matters under redelivery, directly or
// through the functions it calls. It is exported as a fact on every function
// that does something, so a consumer in another package sees it.
type Summary struct {
	// Effect describes the first external effect (HTTP, gRPC, SMTP, AWS,
	// publish), "" if none.
	Effect string
	// Write describes the first database write, "" if none.
	Write string
	// Commits says the function commits a database transaction, directly
	// (a Tx's Commit, gorm's Transaction, pgx's BeginFunc) or through a
	// function it calls.
	Commits bool
	// Remote says the function calls another service (an HTTP request,
	// a gRPC or AWS call, a publish), directly or through a function it
	// calls, even one a repeat does no harm to (a validation sent as a
	// POST): its failure is a transient failure of the work, not a
	// malformed message.
	Remote bool
	// FailsBatch says the function returns a Lambda partial batch
	// response with its BatchItemFailures filled together with an error
	// that is not the literal nil (see failuresWithError): a handler
	// that returns its result (`return middleware.GetBatchResult(in)`)
	// has the whole batch retried (field trial, wave 48: GreenFlag).
	FailsBatch bool
}

// AFact marks Summary as an analysis fact.
func (*Summary) AFact() {}

// String renders the summary for fact logs and test output.
func (s *Summary) String() string {
	return fmt.Sprintf("effect=%q write=%q commits=%t remote=%t failsbatch=%t", s.Effect, s.Write, s.Commits, s.Remote, s.FailsBatch)
}

// Consumers is the result of [ConsumersAnalyzer]: the entry points of a
// package, the functions reachable from them, and what every function does.
type Consumers struct {
	// Roots lists the entry points in source order.
	Roots []*Root

	pass      *analysis.Pass
	reach     map[ast.Node]*Root
	decls     map[*types.Func]*ast.FuncDecl
	summaries map[*types.Func]*Summary
	// handlerTypes are this package's function types called on a consumer
	// path, with the kind of the root that calls them.
	handlerTypes map[*types.TypeName]string
	// handlerParams are this package's functions whose function-typed
	// parameter (by index) reaches a handler slot (a registrar's argument,
	// lambda.Start's, a handler type's): an application's wrapper such as
	// func Register[T any](f func(context.Context, *T) error) { ...
	// cqrs.NewGroupEventHandler(f) }. What callers pass there is a root.
	handlerParams map[*types.Func]map[int]string
	// paramsChanged says a round of findRoots marked a new handler
	// parameter, so the next round looks for its callers.
	paramsChanged bool
	// remotes are entry points registered here whose function is declared
	// in another package, or made there by a factory: the whole-program
	// mode follows them.
	remotes []remote
	// program is the whole-program walk's result for this package, nil in
	// the per-package mode.
	program *programReach
}

// remote is an entry point registered in one package whose function lives
// in another.
type remote struct {
	kind string
	fn   *types.Func
	// factory says fn returns the handler rather than being it.
	factory bool
	// method, when set, says fn is a constructor returning an interface
	// (kq.ConsumeHandler) and the entry is this method of the concrete
	// types its return statements hold.
	method string
	// iface says fn is an interface's method (a method value of an
	// interface was given as the handler): the entries are the module's
	// methods that implement it.
	iface bool
	// field, when set (fn is nil), says a struct field's value was given
	// as the handler and no function of this package stores one in it:
	// the entries are the functions the module stores in that field.
	field *types.Var
}

// abstractMethod reports whether fn is a method of an interface.
func abstractMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	return ok && sig.Recv() != nil && types.IsInterface(sig.Recv().Type())
}

// HandlerTypeFact marks a named function type whose values a consumer calls
// (a wrapper's handler type): a function passed as it in another package is
// an entry point of Kind.
type HandlerTypeFact struct {
	// Kind is the kind of the consumer that calls it (KindSarama, ...).
	Kind string
}

// AFact marks HandlerTypeFact as an analysis fact.
func (*HandlerTypeFact) AFact() {}

// HandlerParamFact marks a function whose function-typed parameters (by
// index) are handed to a consumer's handler slot (see
// Consumers.handlerParams): an argument passed there in another package is
// an entry point of the kind the index maps to.
type HandlerParamFact struct {
	Kinds map[int]string
}

// AFact marks HandlerParamFact as an analysis fact.
func (*HandlerParamFact) AFact() {}

func (f *HandlerParamFact) String() string { return fmt.Sprintf("handler parameters %v", f.Kinds) }

// String renders the fact for fact logs and test output.
func (f *HandlerTypeFact) String() string { return "handler type of " + f.Kind }

// RootOf returns the entry point from which fn (a FuncDecl or FuncLit) is
// reached, or nil if fn is on no consumer path.
func (c *Consumers) RootOf(fn ast.Node) *Root { return c.reach[fn] }

// Summary returns what fn does, for a function of this package or, through
// facts, of an imported one; nil when it does nothing that matters.
func (c *Consumers) Summary(fn *types.Func) *Summary {
	if fn == nil {
		return nil
	}
	fn = fn.Origin()
	if classifiedPackage(fn) {
		return nil // judged by the call itself (KnownSDKs, the config)
	}
	if fn.Pkg() == c.pass.Pkg {
		if s := c.summaries[fn]; s != nil && (s.Effect != "" || s.Write != "" || s.Remote) {
			return s
		}
		return nil
	}
	var s Summary
	if c.pass.ImportObjectFact(fn, &s) && (s.Effect != "" || s.Write != "" || s.Remote) {
		return &s
	}
	return nil
}

// Commits reports whether a call of fn commits a database transaction: fn
// is one of this package's functions whose [Summary] says so, or an
// imported one whose fact does.
func (c *Consumers) Commits(fn *types.Func) bool {
	if fn == nil {
		return false
	}
	fn = fn.Origin()
	if classifiedPackage(fn) {
		return false
	}
	if fn.Pkg() == c.pass.Pkg {
		s := c.summaries[fn]
		return s != nil && s.Commits
	}
	var s Summary
	return c.pass.ImportObjectFact(fn, &s) && s.Commits
}

// Local reports whether fn is declared, with a body, in this package.
func (c *Consumers) Local(fn *types.Func) bool {
	return fn != nil && c.decls[fn.Origin()] != nil
}

// checkedInside reports whether fn's own body is checked on a consumer path:
// it is declared in this package, or the whole-program walk reached it in a
// checked package (whose findings then point into fn itself).
func (c *Consumers) checkedInside(fn *types.Func) bool {
	if c.Local(fn) {
		return true
	}
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	v, ok := programs.Load(fn.Pkg())
	return ok && v.(*programReach).funcs[fn.Origin()]
}

// works reports whether the whole-program walk found that fn, wherever it
// is declared, writes to a database or makes an effect, itself or through
// what it calls (interfaces and function values included); false in the
// per-package mode.
func (c *Consumers) works(fn *types.Func) bool {
	if fn == nil || fn.Pkg() == nil {
		return false
	}
	v, ok := programs.Load(fn.Pkg())
	return ok && v.(*programReach).works[fn.Origin()]
}

// commitsBelow reports whether, in the whole-program mode, the walk from
// call reaches a transaction commit (through an interface method or a
// function value too); false in the per-package mode.
func (c *Consumers) commitsBelow(call *ast.CallExpr) bool {
	return c.program != nil && c.program.commitSites[call.Lparen]
}

// ackerOf returns, in the whole-program mode, the function that acks the
// message when fn (a FuncDecl or FuncLit of this package, not an entry
// point) returns a nil error, or, with always, after fn returns whatever
// it returns; "" if none is known.
func (c *Consumers) ackerOf(fn ast.Node) (acker string, always bool) {
	if c.program == nil || c.program.nodes[fn] == nil {
		return "", false
	}
	return c.program.nodes[fn].acker, c.program.nodes[fn].ackAlways
}

// entryTail reports whether, in the whole-program mode, the entry point
// returns fn's error as its own result with no branch of its own
// (`return l.operate(ctx, v)`): fn's failure branches are the entry's.
func (c *Consumers) entryTail(fn ast.Node) bool {
	return c.program != nil && c.program.nodes[fn] != nil && c.program.nodes[fn].tail
}

// guarded reports whether, in the whole-program mode, every walk that
// reaches fn (a FuncDecl or FuncLit of this package) reaches it only below
// a won guarded transition (see guardedAt): a redelivery skips it.
func (c *Consumers) guarded(fn ast.Node) bool {
	return c.program != nil && c.program.guarded[fn] && !c.program.unguarded[fn]
}

// lookedUp reports whether, in the whole-program mode, every walk that
// reaches fn reaches it only in a branch taken when a lookup found no row
// (see absentAt): a redelivery finds what it created.
func (c *Consumers) lookedUp(fn ast.Node) bool {
	return c.program != nil && c.program.absent[fn] && !c.program.present[fn]
}

// PathOf returns, in the whole-program mode, the chain of functions from
// the entry point to fn (a FuncDecl or FuncLit of this package), the entry
// point first; nil in the per-package mode or off consumer paths.
func (c *Consumers) PathOf(fn ast.Node) []string {
	if c.program == nil || c.program.nodes[fn] == nil {
		return nil
	}
	return c.program.nodes[fn].path
}

// ConsumersAnalyzer finds consumer entry points (Watermill and ackgap
// handlers, Sarama ConsumeClaim methods, franz-go poll loops, kafka-go reader
// loops, SQS ReceiveMessage loops, Lambda SQSEvent handlers) and follows
// calls from them within the package; it exports a [Summary] fact for every
// function with an external effect or a database write, so calls across
// packages are followed too. Every check requires it.
var ConsumersAnalyzer = &analysis.Analyzer{
	Name:       "ackgapconsumers",
	Doc:        "find consumer entry points and summarise what functions do (used by the ackgapvet checks; reports nothing)",
	Requires:   []*analysis.Analyzer{inspect.Analyzer},
	Run:        runConsumers,
	ResultType: reflect.TypeFor[*Consumers](),
	FactTypes:  []analysis.Fact{new(Summary), new(HandlerTypeFact), new(HandlerParamFact)},
}

// registrars are the Watermill/ackgap functions whose function arguments
// become handlers.
var registrars = map[string]bool{
	"AddHandler": true, "AddConsumerHandler": true, "AddNoPublisherHandler": true,
	"AddBatchHandler": true, "Adapt": true, "ConsumerHandler": true, "JSON": true,
	"NewProcessor": true, "Handle": true,
}

// summarized reports whether the functions of pass's package get a
// [Summary]. The standard library and the libraries whose calls the checks
// classify directly (brokers, drivers, AWS, gRPC, OpenTelemetry, ackgap
// itself) do not: their internals make HTTP calls and writes (an SQS
// ReceiveMessage is an HTTP request) that are not the application's effects.
// A package outside a module (GOPATH mode) with no dot in its first path
// element is taken for the standard library.
func summarized(pass *analysis.Pass) bool {
	path := pass.Pkg.Path()
	first, _, _ := strings.Cut(path, "/")
	if pass.Module == nil && !strings.Contains(first, ".") {
		return false
	}
	if strings.HasPrefix(path, pathAckgap+"/examples/") {
		return true
	}
	for _, p := range []string{
		pathWatermill, pathAckgap, "github.com/IBM/sarama", "github.com/Shopify/sarama",
		"github.com/twmb/franz-go", pathKafkaGo, "github.com/aws/", pathGRPC,
		"github.com/jackc/", "modernc.org/", "go.opentelemetry.io/", "golang.org/x/", "google.golang.org/",
	} {
		if strings.HasPrefix(path, p) {
			return false
		}
	}
	return true
}

func runConsumers(pass *analysis.Pass) (any, error) {
	if err := configError(); err != nil {
		return nil, err
	}
	ins := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	indexLocalStrings(pass)
	c := &Consumers{
		pass:          pass,
		reach:         map[ast.Node]*Root{},
		decls:         map[*types.Func]*ast.FuncDecl{},
		summaries:     map[*types.Func]*Summary{},
		handlerTypes:  map[*types.TypeName]string{},
		handlerParams: map[*types.Func]map[int]string{},
	}
	for _, f := range pass.Files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				if fn, ok := pass.TypesInfo.Defs[fd.Name].(*types.Func); ok {
					c.decls[fn] = fd
				}
			}
		}
	}
	seen := map[ast.Node]bool{}
	addRoot := func(kind, name string, n ast.Node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		c.Roots = append(c.Roots, &Root{Kind: kind, Name: name, Node: n})
	}
	// The function-typed parameters of the package's functions, for a
	// handler slot given a parameter (an application's wrapper).
	type paramAt struct {
		fn  *types.Func
		idx int
	}
	params := map[*types.Var]paramAt{}
	for fn := range c.decls {
		sig := fn.Type().(*types.Signature)
		if sig.Variadic() {
			continue
		}
		for i := range sig.Params().Len() {
			if p := sig.Params().At(i); isSignature(p.Type()) {
				params[p] = paramAt{fn, i}
			}
		}
	}
	held, resolving := localFuncValues(pass), map[*types.Var]bool{}
	var rootOfExpr func(kind string, e ast.Expr)
	// fromHeld makes roots of the values a local variable or a field
	// holds (see localFuncValues); h = h cycles end at a variable already
	// being resolved. It reports whether v holds any.
	fromHeld := func(kind string, v *types.Var) bool {
		vals, ok := held[v]
		if !ok || resolving[v] {
			return false
		}
		resolving[v] = true
		for _, val := range vals {
			rootOfExpr(kind, val)
		}
		delete(resolving, v)
		return true
	}
	rootOfExpr = func(kind string, e ast.Expr) {
		// for _, h := range handlers { sub.Receive(ctx, h.Handler) }: the
		// functions the package stores in that field are the entry points
		// (field trial, wave 58: gqueue's Pub/Sub and asynq handler lists).
		if sel, ok := ast.Unparen(e).(*ast.SelectorExpr); ok {
			if s := pass.TypesInfo.Selections[sel]; s != nil && s.Kind() == types.FieldVal {
				if v, ok := s.Obj().(*types.Var); ok {
					if fromHeld(kind, v) {
						return
					}
					if isSignature(v.Type()) {
						// Set in another package (a literal an adapter's
						// method returns): the whole-program mode finds
						// the functions stored in the field.
						c.remotes = append(c.remotes, remote{kind: kind, field: v.Origin()})
						return
					}
				}
			}
		}
		if id, ok := ast.Unparen(e).(*ast.Ident); ok {
			if v, ok := pass.TypesInfo.Uses[id].(*types.Var); ok {
				if p, ok := params[v]; ok {
					if c.handlerParams[p.fn] == nil {
						c.handlerParams[p.fn] = map[int]string{}
					}
					if c.handlerParams[p.fn][p.idx] == "" {
						c.handlerParams[p.fn][p.idx] = kind
						c.paramsChanged = true
					}
					return
				}
				// h := func(ctx, m) {...}; sub.Receive(ctx, h): the
				// function a local variable holds (field trial, wave
				// 51: go-gcp-doc-ai's Pub/Sub callback).
				if fromHeld(kind, v) {
					return
				}
			}
		}
		if lit, ok := ast.Unparen(e).(*ast.FuncLit); ok {
			addRoot(kind, "func literal", lit)
			return
		}
		if fn := usedFunc(pass, e); fn != nil && c.decls[fn] != nil {
			addRoot(kind, fn.Name(), c.decls[fn])
		} else if fn := referencedFunc(pass.TypesInfo, e); fn != nil && abstractMethod(fn) {
			// opsBookings.OnBookingMade, a method value of an interface:
			// the whole-program mode makes entries of the module's
			// methods that implement it (field trial, wave 47: tickets'
			// CQRS read models).
			c.remotes = append(c.remotes, remote{kind: kind, fn: fn, iface: true})
		} else if fn != nil && fn.Pkg() != pass.Pkg {
			c.remotes = append(c.remotes, remote{kind: kind, fn: fn})
		} else if call, ok := ast.Unparen(e).(*ast.CallExpr); ok {
			if f := callee(pass.TypesInfo, call); f != nil {
				c.remotes = append(c.remotes, remote{kind: kind, fn: f, factory: true})
			}
		}
		c.factoryRoots(kind, e, addRoot)
	}
	enclosing := func(stack []ast.Node) (ast.Node, string) {
		for i := len(stack) - 1; i >= 0; i-- {
			switch n := stack[i].(type) {
			case *ast.FuncLit:
				if calledInPlace(stack, i) {
					continue
				}
				return n, "func literal"
			case *ast.FuncDecl:
				return n, n.Name.Name
			}
		}
		return nil, ""
	}
	nodeTypes := []ast.Node{(*ast.CallExpr)(nil), (*ast.FuncDecl)(nil), (*ast.FuncLit)(nil), (*ast.CompositeLit)(nil), (*ast.RangeStmt)(nil), (*ast.UnaryExpr)(nil)}
	// Rounds: a function type called from a consumer path becomes a handler
	// type, and values passed as it become roots in the next round.
	for range 3 {
		c.paramsChanged = false
		c.findRoots(ins, nodeTypes, addRoot, rootOfExpr, enclosing)
		c.follow()
		if !c.markHandlerTypes() && !c.paramsChanged {
			break
		}
	}
	for obj, kind := range c.handlerTypes {
		pass.ExportObjectFact(obj, &HandlerTypeFact{Kind: kind})
	}
	for fn, kinds := range c.handlerParams {
		pass.ExportObjectFact(fn, &HandlerParamFact{Kinds: kinds})
	}
	if v, ok := programs.Load(pass.Pkg); ok {
		c.program = v.(*programReach)
		for n, r := range c.program.nodes {
			// A function some walk reaches behind a guarded transition is
			// named with the consumer that reaches it without one.
			if _, ok := c.reach[n]; !ok || c.program.guarded[n] && !r.behindGuard {
				c.reach[n] = r.root
			}
		}
	}

	// Summaries, bottom-up with a cycle guard, exported as facts.
	if len(c.Roots) == 0 && !summarized(pass) {
		return c, nil
	}
	for fn := range c.decls {
		c.summarize(fn, map[*types.Func]bool{})
	}
	if !summarized(pass) {
		return c, nil // used here, not exported
	}
	for fn, s := range c.summaries {
		if s.Effect != "" || s.Write != "" || s.Commits || s.Remote || s.FailsBatch {
			pass.ExportObjectFact(fn, s)
		}
	}
	return c, nil
}

// findRoots walks the package for entry points.
func (c *Consumers) findRoots(ins *inspector.Inspector, nodeTypes []ast.Node, addRoot func(kind, name string, n ast.Node), rootOfExpr func(kind string, e ast.Expr), enclosing func(stack []ast.Node) (ast.Node, string)) {
	pass := c.pass
	ins.WithStack(nodeTypes, func(n ast.Node, push bool, stack []ast.Node) bool {
		if !push {
			return true
		}
		c.moreRoots(n, stack, addRoot, rootOfExpr)
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Name.Name == "ConsumeClaim" && n.Recv != nil && isSaramaHandlerSig(pass.TypesInfo, n.Type) {
				addRoot(KindSarama, n.Name.Name, n)
			}
			if k := lambdaEventKind(pass.TypesInfo, n.Type); k != "" {
				if !c.perRecordCallee(n) {
					addRoot(k, n.Name.Name, n)
				}
			} else if k := rawLambdaKind(pass.TypesInfo, n.Type, n.Body); k != "" {
				addRoot(k, n.Name.Name, n)
			}
		case *ast.FuncLit:
			if k := lambdaEventKind(pass.TypesInfo, n.Type); k != "" {
				addRoot(k, "func literal", n)
			} else if k := rawLambdaKind(pass.TypesInfo, n.Type, n.Body); k != "" {
				addRoot(k, "func literal", n)
			}
		case *ast.CompositeLit: // batch.Config{Handler: h, BatchHandler: b}
			for _, e := range n.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				if key, ok := kv.Key.(*ast.Ident); ok {
					if field, ok := pass.TypesInfo.Uses[key].(*types.Var); ok {
						if kind := c.handlerKind(field.Type()); kind != "" {
							rootOfExpr(kind, kv.Value)
						}
					}
				}
			}
		case *ast.CallExpr:
			// An argument passed as a handler type, or a conversion to one.
			if tv, ok := pass.TypesInfo.Types[n.Fun]; ok && tv.IsType() && len(n.Args) == 1 {
				if kind := c.handlerKind(tv.Type); kind != "" && !(kind == KindAsynq && asynqMiddleware(pass.TypesInfo, n.Args[0])) {
					rootOfExpr(kind, n.Args[0])
				}
			} else if sig, ok := pass.TypesInfo.TypeOf(n.Fun).(*types.Signature); ok {
				for i, a := range n.Args {
					if kind := c.handlerKind(paramType(sig, i)); kind != "" {
						rootOfExpr(kind, a)
					}
				}
			}
			fn := callee(pass.TypesInfo, n)
			if fn == nil {
				return true
			}
			kinds := c.handlerParamKinds(fn.Origin())
			for _, i := range slices.Sorted(maps.Keys(kinds)) {
				if i < len(n.Args) {
					rootOfExpr(kinds[i], n.Args[i])
				}
			}
			path, recv, name := funcPath(fn), recvName(fn), fn.Name()
			switch {
			case registrars[name] && (strings.HasPrefix(path, pathWatermill) || strings.HasPrefix(path, pathAckgap)):
				kind := KindWatermill
				if strings.HasPrefix(path, pathAckgap) {
					kind = KindAckgap
				}
				for _, a := range n.Args {
					if t := pass.TypesInfo.TypeOf(a); t != nil {
						if _, ok := t.Underlying().(*types.Signature); ok {
							rootOfExpr(kind, a)
						}
					}
				}
			case (name == "PollFetches" || name == "PollRecords") && (path == pathKgo && recv == "Client" || kgoInterfaceMethod(fn)):
				// As for the other clients: a function that polls once
				// and returns the records (a Source's Poll behind an
				// interface) is a receive wrapper, and the loops that
				// call it are the consumers (field trial, wave 49:
				// graphrag's ingestion worker).
				c.receiveRoot(KindFranz, stack, addRoot)
			case kafkaGoReaderMethod(fn):
				c.receiveRoot(KindKafkaGo, stack, addRoot)
			}
		}
		return true
	})
}

// follow records, for every function reachable from a root through uses of
// package-local functions, the root that reaches it.
func (c *Consumers) follow() {
	for _, r := range c.Roots {
		queue := []ast.Node{r.Node}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			if _, done := c.reach[n]; done {
				continue
			}
			c.reach[n] = r
			ast.Inspect(n, func(m ast.Node) bool {
				switch m := m.(type) {
				case *ast.FuncLit:
					if m != n {
						queue = append(queue, m)
					}
				case *ast.Ident:
					if fn, ok := c.pass.TypesInfo.Uses[m].(*types.Func); ok && fn.Pkg() == c.pass.Pkg {
						if d := c.decls[fn.Origin()]; d != nil {
							queue = append(queue, d)
						}
					}
				}
				return true
			})
		}
	}
}

// markHandlerTypes marks the package's named function types whose values are
// called on a consumer path; it reports whether it marked a new one.
func (c *Consumers) markHandlerTypes() bool {
	changed := false
	for n, r := range c.reach {
		if r.Kind == KindNATS || r.Kind == KindNATSCore {
			// A subscription callback calls the code's own handler type
			// (broker.JsHandler) and acks after it: the handlers are
			// that callback's, not entry points with no ack of their
			// own (field trial, wave 40: MVP's RegisterJsHandler).
			continue
		}
		ast.Inspect(n, func(m ast.Node) bool {
			call, ok := m.(*ast.CallExpr)
			if !ok {
				return true
			}
			named, ok := types.Unalias(c.pass.TypesInfo.TypeOf(call.Fun)).(*types.Named)
			if !ok || named.Obj().Pkg() != c.pass.Pkg {
				return true
			}
			if _, ok := named.Underlying().(*types.Signature); ok && c.handlerTypes[named.Obj()] == "" {
				c.handlerTypes[named.Obj()] = r.Kind
				changed = true
			}
			return true
		})
	}
	return changed
}

func (c *Consumers) summarize(fn *types.Func, visiting map[*types.Func]bool) *Summary {
	if s, ok := c.summaries[fn]; ok {
		return s
	}
	if visiting[fn] {
		return &Summary{}
	}
	visiting[fn] = true
	s := &Summary{FailsBatch: returnsFailuresWithError(c.pass.TypesInfo, c.decls[fn])}
	body := c.decls[fn].Body
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if d := effectOf(c.pass.TypesInfo, call); d != "" {
			s.Remote = true
			if s.Effect == "" && harmfulRepeat(c.pass, fn.Name(), body, call, d) {
				s.Effect = d
			}
		}
		if d := cmp.Or(dbWriteOf(c.pass.TypesInfo, call), keyedWriteDesc(c.pass.TypesInfo, call)); d != "" && s.Write == "" {
			s.Write = d
		}
		if txCommitOf(c.pass.TypesInfo, call) != "" {
			s.Commits = true
		}
		cf := callee(c.pass.TypesInfo, call)
		if cf == nil {
			return true
		}
		var sub *Summary
		if cf.Pkg() == c.pass.Pkg {
			if c.decls[cf.Origin()] != nil {
				sub = c.summarize(cf.Origin(), visiting)
				s.Commits = s.Commits || sub.Commits
			}
		} else {
			sub = c.Summary(cf)
			s.Commits = s.Commits || c.Commits(cf)
		}
		if sub != nil {
			if sub.Effect != "" && s.Effect == "" {
				s.Effect = viaDesc(cf, sub.Effect)
			}
			if sub.Write != "" && s.Write == "" {
				s.Write = viaDesc(cf, sub.Write)
			}
			s.Remote = s.Remote || sub.Remote
		}
		return true
	})
	c.summaries[fn] = s
	return s
}

// failsBatch reports whether fn, of this package or another, returns a
// filled partial batch response together with an error (see
// [Summary.FailsBatch]).
func (c *Consumers) failsBatch(fn *types.Func) bool {
	if fn == nil {
		return false
	}
	fn = fn.Origin()
	if fn.Pkg() == c.pass.Pkg {
		s := c.summaries[fn]
		return s != nil && s.FailsBatch
	}
	var s Summary
	return c.pass.ImportObjectFact(fn, &s) && s.FailsBatch
}

// returnsFailuresWithError reports whether the declaration d returns, in a
// return statement of its own, a response literal with BatchItemFailures
// (`&BatchResult{BatchItemFailures: f}`) together with a last result that
// is not the literal nil.
func returnsFailuresWithError(info *types.Info, d *ast.FuncDecl) bool {
	if d == nil || d.Body == nil {
		return false
	}
	found := false
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok || found {
			return false
		}
		ret, ok := n.(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 2 || !failuresLiteral(info, ret.Results[0]) {
			return true
		}
		if id, ok := ast.Unparen(ret.Results[1]).(*ast.Ident); !ok || id.Name != "nil" {
			found = true
		}
		return !found
	})
	return found
}

// viaDesc says that a call to fn leads to desc.
func viaDesc(fn *types.Func, desc string) string {
	if strings.HasPrefix(desc, "calls ") {
		return "calls " + qualName(fn) + ", which " + desc
	}
	return "calls " + qualName(fn) + ", which makes " + desc
}

// handlerParamKinds returns the handler parameters of fn (see
// Consumers.handlerParams): this package's, or another's through a
// [HandlerParamFact].
func (c *Consumers) handlerParamKinds(fn *types.Func) map[int]string {
	if fn.Pkg() == c.pass.Pkg {
		return c.handlerParams[fn]
	}
	var fact HandlerParamFact
	if fn.Pkg() != nil && c.pass.ImportObjectFact(fn, &fact) {
		return fact.Kinds
	}
	return nil
}

// handlerKind returns the kind of entry point a value of type t is: KindAckgap
// or KindWatermill for a named function type of ackgap or Watermill whose
// name ends in HandlerFunc (router.HandlerFunc, batch.BatchHandlerFunc,
// message.HandlerFunc, message.NoPublishHandlerFunc), the root's kind for a
// function type called on a consumer path (this package's, or another's
// through a [HandlerTypeFact]), "" for anything else.
func (c *Consumers) handlerKind(t types.Type) string {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return ""
	}
	if _, ok := n.Underlying().(*types.Signature); !ok {
		return ""
	}
	if kind := c.handlerTypes[n.Obj()]; kind != "" {
		return kind
	}
	var fact HandlerTypeFact
	if n.Obj().Pkg() != c.pass.Pkg && c.pass.ImportObjectFact(n.Obj(), &fact) {
		return fact.Kind
	}
	if !strings.HasSuffix(n.Obj().Name(), "HandlerFunc") {
		return ""
	}
	switch path := pkgPath(n.Obj().Pkg()); {
	case strings.HasPrefix(path, pathAckgap):
		return KindAckgap
	case strings.HasPrefix(path, pathWatermill):
		return KindWatermill
	case path == pathAsynq:
		// A factory returning asynq.HandlerFunc, given to mux.Handle
		// (field trial, wave 60: xu-shop's seven task handlers).
		return KindAsynq
	case path == pathNSQ:
		return KindNSQ
	}
	return ""
}

// paramType returns the type of the parameter argument i binds to, through a
// variadic tail; nil past the end.
func paramType(sig *types.Signature, i int) types.Type {
	ps := sig.Params()
	switch {
	case sig.Variadic() && i >= ps.Len()-1:
		if sl, ok := ps.At(ps.Len() - 1).Type().(*types.Slice); ok {
			return sl.Elem()
		}
		return nil
	case i < ps.Len():
		return ps.At(i).Type()
	}
	return nil
}

func isSaramaHandlerSig(info *types.Info, ft *ast.FuncType) bool {
	if ft.Params == nil || ft.Params.NumFields() != 2 {
		return false
	}
	var ps []types.Type
	for _, f := range ft.Params.List {
		t := info.TypeOf(f.Type)
		for range max(1, len(f.Names)) {
			ps = append(ps, t)
		}
	}
	for _, t := range ps {
		n, ok := t.(*types.Named)
		if !ok || n.Obj().Pkg() == nil || !isSaramaPath(pkgPath(n.Obj().Pkg())) {
			return false
		}
	}
	return true
}

// lambdaEventKind is the root kind of a function taking an aws-lambda-go
// SQSEvent, KinesisEvent or KafkaEvent, "" for any other function.
func lambdaEventKind(info *types.Info, ft *ast.FuncType) string {
	if ft.Params == nil {
		return ""
	}
	for _, f := range ft.Params.List {
		t := info.TypeOf(f.Type)
		if t == nil {
			continue
		}
		for name, kind := range lambdaEvents {
			if isNamed(t, pathLambdaEvt, name) {
				return kind
			}
		}
	}
	// A handler of a function that serves several event sources takes a
	// type of its own that wraps the events (struct{ SQSEvent
	// *events.SQSEvent; S3Event *events.S3Event } with an UnmarshalJSON
	// that fills one): a field of one of the queue event types makes it a
	// handler of that kind.
	if ft.Params.NumFields() <= 2 {
		for _, f := range ft.Params.List {
			if k := wrappedLambdaEvent(info.TypeOf(f.Type)); k != "" {
				return k
			}
		}
	}
	// A handler that takes the event raw (json.RawMessage) and answers
	// with a partial batch response is one too.
	if ft.Results != nil {
		for _, f := range ft.Results.List {
			t := info.TypeOf(f.Type)
			switch {
			case t == nil:
			case isNamed(t, pathLambdaEvt, "SQSEventResponse"):
				return KindLambda
			case isNamed(t, pathLambdaEvt, "KinesisEventResponse"):
				return KindLambdaKinesis
			case isNamed(t, pathLambdaEvt, "DynamoDBEventResponse"):
				return KindLambdaDynamoDB
			}
		}
	}
	return ""
}

// perRecordCallee reports whether fd, a function with a Lambda handler's
// signature, is only called (never used as a value, as lambda.Start's
// argument is), and by a function that is a Lambda handler itself: a
// helper the handler calls per record with a one-record event (field
// trial, wave 20: bolt-monitor's handleSQSEvent under
// handleSQSEventBatch), whose result the handler turns into its batch
// response. It is on the handler's path, not a handler.
func (c *Consumers) perRecordCallee(fd *ast.FuncDecl) bool {
	info := c.pass.TypesInfo
	fn, _ := info.Defs[fd.Name].(*types.Func)
	if fn == nil {
		return false
	}
	calls, value, byHandler := 0, false, false
	inspectStack(c.pass.Files, func(n ast.Node, stack []ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok || info.Uses[id] != fn {
			return true
		}
		parent := stack[len(stack)-2]
		if sel, ok := parent.(*ast.SelectorExpr); ok && sel.Sel == id && len(stack) >= 3 {
			parent = stack[len(stack)-3]
		}
		call, ok := parent.(*ast.CallExpr)
		if !ok || call.Fun != stack[len(stack)-2] && call.Fun != ast.Expr(id) {
			value = true
			return true
		}
		calls++
		for i := len(stack) - 1; i >= 0; i-- {
			if ft := funcType(stack[i]); ft != nil {
				byHandler = byHandler || lambdaEventKind(info, ft) != ""
				break
			}
		}
		return true
	})
	return calls > 0 && !value && byHandler
}

// lambdaEventType reports whether t is one of lambdaEvents' types.
func lambdaEventType(t types.Type) bool {
	for name := range lambdaEvents {
		if isNamed(t, pathLambdaEvt, name) {
			return true
		}
	}
	return false
}

// wrappedLambdaEvent is the root kind of a struct type (or a pointer to
// one) with a field, or a pointer field, of type events.SQSEvent,
// KinesisEvent or KafkaEvent; "" otherwise.
func wrappedLambdaEvent(t types.Type) string {
	if t == nil {
		return ""
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok {
		return ""
	}
	for i := range st.NumFields() {
		ft := st.Field(i).Type()
		if p, ok := ft.Underlying().(*types.Pointer); ok {
			ft = p.Elem()
		}
		for name, kind := range lambdaEvents {
			if isNamed(ft, pathLambdaEvt, name) {
				return kind
			}
		}
	}
	return ""
}

// rawLambdaKind is the root kind of a function that takes its event raw
// (json.RawMessage, []byte) and unmarshals it into an aws-lambda-go
// SQSEvent, KinesisEvent or KafkaEvent itself without handing the decoded
// event to another function (which is then the handler); "" otherwise.
func rawLambdaKind(info *types.Info, ft *ast.FuncType, body *ast.BlockStmt) string {
	if body == nil || ft.Params == nil {
		return ""
	}
	raw := false
	for _, f := range ft.Params.List {
		if t := info.TypeOf(f.Type); t != nil {
			if sl, ok := t.Underlying().(*types.Slice); ok && types.Identical(sl.Elem(), types.Typ[types.Byte]) {
				raw = true
			}
		}
	}
	if !raw {
		return ""
	}
	kind, handsOn := "", false
	ast.Inspect(body, func(n ast.Node) bool {
		if _, ok := n.(*ast.FuncLit); ok {
			return false
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := callee(info, call)
		if fn != nil && fn.Name() == "Unmarshal" && len(call.Args) == 2 {
			if u, ok := ast.Unparen(call.Args[1]).(*ast.UnaryExpr); ok {
				if t := info.TypeOf(u.X); t != nil {
					for name, k := range lambdaEvents {
						if isNamed(t, pathLambdaEvt, name) {
							kind = k
						}
					}
				}
			}
			return true
		}
		for _, a := range call.Args {
			if t := info.TypeOf(a); t != nil {
				if lambdaEventType(t) {
					handsOn = true
				}
			}
		}
		return true
	})
	if handsOn {
		return ""
	}
	return kind
}

// kgoInterfaceMethod reports whether fn is a method of an application's
// interface over franz-go's *kgo.Client (its PollFetches returns
// kgo.Fetches): a loop written against the wrapper is read as the
// client's.
func kgoInterfaceMethod(fn *types.Func) bool {
	sig, ok := fn.Type().(*types.Signature)
	if !ok || sig.Recv() == nil || !types.IsInterface(sig.Recv().Type()) {
		return false
	}
	for v := range sig.Results().Variables() {
		if isNamed(v.Type(), pathKgo, "Fetches") {
			return true
		}
	}
	return false
}

// localFuncValues maps each local variable and each struct field of a
// function type in pass's files to the values assigned to it (h :=
// func(...) {...}, var h = f, h = s.handle, r.Handler = f, route{Handler:
// f}): a handler held in a variable or a field before it is registered.
// Package-level variables are left out: any function may change them.
func localFuncValues(pass *analysis.Pass) map[*types.Var][]ast.Expr {
	held := map[*types.Var][]ast.Expr{}
	add := func(obj types.Object, val ast.Expr) {
		v, ok := obj.(*types.Var)
		if !ok || !isSignature(v.Type()) || !v.IsField() && (v.Parent() == nil || v.Parent() == pass.Pkg.Scope()) {
			return
		}
		held[v] = append(held[v], val)
	}
	target := func(l ast.Expr) types.Object {
		switch l := l.(type) {
		case *ast.Ident:
			if obj := pass.TypesInfo.Defs[l]; obj != nil {
				return obj
			}
			return pass.TypesInfo.Uses[l]
		case *ast.SelectorExpr:
			if s := pass.TypesInfo.Selections[l]; s != nil && s.Kind() == types.FieldVal {
				return s.Obj()
			}
		}
		return nil
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Lhs) != len(n.Rhs) {
					return true
				}
				for i, l := range n.Lhs {
					add(target(l), n.Rhs[i])
				}
			case *ast.ValueSpec:
				if len(n.Names) != len(n.Values) {
					return true
				}
				for i, id := range n.Names {
					add(pass.TypesInfo.Defs[id], n.Values[i])
				}
			case *ast.CompositeLit:
				t := pass.TypesInfo.TypeOf(n)
				if t == nil {
					return true
				}
				if _, ok := t.Underlying().(*types.Struct); !ok {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							add(pass.TypesInfo.Uses[id], kv.Value)
						}
					}
				}
			}
			return true
		})
	}
	return held
}
