package ackgapvet

import (
	"cmp"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"
	"sync"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

// The whole-program mode: the module is loaded with go/packages, built to
// SSA, and a call graph is made by VTA (variable type analysis, Sundaresan
// et al., OOPSLA 2000; golang.org/x/tools/go/callgraph/vta, the call graph
// govulncheck uses), refined twice from CHA over the functions reachable
// from the entry points. From every entry point the checker follows that
// graph (static calls, interface calls, function values and fields,
// closures, goroutines, generic instances) and, beside it, values sent on a
// channel to the functions that receive from a channel of the same element
// type (a worker pool). The functions reached become part of the consumer
// for every check, wherever they are declared in the module.

// libraryHops is how many calls in a row the walk follows through packages
// outside the checked module (the standard library, SDKs): enough for
// errgroup.Go, sync.Once.Do or a router that calls back a handler, not so
// many that an HTTP transport's internals become the consumer's.
const libraryHops = 3

// reached is what the whole-program walk knows of one function's syntax.
type reached struct {
	root *Root
	// path is the chain of function names from the entry point to this
	// function, the entry point first.
	path []string
	// acker names the function that acks the message when this one, not
	// the entry point, returns a nil error ("" if none): see nilAcks.
	acker string
	// ackAlways: the acker acks after this function returns whatever it
	// returns (its result is discarded).
	ackAlways bool
	// tail: the entry point returns this function's error as its own
	// result, with no branch of its own (see nilAcks).
	tail bool
	// behindGuard: the walk that recorded this reaches the function only
	// below a won guarded transition (see guardedAt).
	behindGuard bool
}

// programReach is the whole-program result for one package: its functions
// reached from any entry point of the program.
type programReach struct {
	nodes map[ast.Node]*reached
	funcs map[*types.Func]bool
	// works lists the functions reached that write to a database or make
	// an effect, themselves or through what they call on the walk (through
	// interfaces and function values too).
	works map[*types.Func]bool
	// commitSites lists the calls (by the position of their left
	// parenthesis) below which the walk reaches a transaction commit,
	// whatever they call through (an interface method, a function value).
	commitSites map[token.Pos]bool
	// workSites lists the calls below which the walk reaches a database
	// write or an effect, likewise.
	workSites map[token.Pos]bool
	// kafkaAckSites lists the calls below which the walk reaches a Kafka
	// client's offset mark or commit (a wrapper in another package:
	// kafka.CommitPlayerPayload(msg) around Reader.CommitMessages).
	kafkaAckSites map[token.Pos]bool
	// listTakes lists the go-redis calls that take a message off a list or
	// sorted set by removing it (BLPop, BRPop, LPop, RPop, ZPopMin, ...) in
	// a Redis queue loop's walk that does work, with the loop's name (see
	// destructiveTake).
	listTakes map[token.Pos]string
	// ackSites lists the calls below which the walk reaches any ack (an
	// SQS delete, a Kafka mark or commit, a Watermill Ack): the code's own
	// `h.deleteMessage(m)` around a client's DeleteMessage, calls down.
	ackSites map[token.Pos]bool
	// receiveSites lists the calls below which the walk reaches a receive
	// (see receives): the code's own fetch in another package
	// (q.DequeueBookingJob around FetchMessage).
	receiveSites map[token.Pos]bool
	// effectSites lists the calls below which the walk reaches an
	// external effect (see effectOf): an HTTP request, an SDK's call, a
	// publish.
	effectSites map[token.Pos]bool
	// readMessageSites lists the calls below which the walk reaches
	// kafka-go's Reader.ReadMessage (the code's wrapper of it, called
	// through its own interface: wave 35, payment-gateway): with a GroupID
	// the offset is committed as that call returns.
	readMessageSites map[token.Pos]bool
	// lookupSites lists the calls below which the walk reaches a database
	// read (see dbLookup): the code's own GetCustomer around a SELECT.
	lookupSites map[token.Pos]bool
	// nilErrSites lists the static calls of the module's own functions
	// that return a nil error on every path (see nilErrorOnly): a
	// failure branch on their error never runs.
	nilErrSites map[token.Pos]bool
	// dedupe says, per entry point, whether a function on its walk makes
	// a dedupe record (see recordsEvent).
	dedupe map[*Root]bool
	// undeduped lists, per entry point, the functions of its walk that
	// no dedupe record precedes on their own path: every function that
	// makes one is reached only through another target of the same call
	// site (another handler a shared loop calls through one function
	// value), see dedupeCovers.
	undeduped map[*Root]map[ast.Node]bool
	// absent and present mark the functions some walk reaches only in a
	// branch taken when a lookup found no row (see absentAt), and those
	// some walk reaches otherwise.
	absent, present map[ast.Node]bool
	// unacked marks the entry points (by their function's syntax) whose
	// walk acks nowhere: no commit, offset mark or store, delete (see
	// walkAcks).
	unacked map[ast.Node]bool
	// uncommitted marks those whose walk commits no offset (a store is
	// not a commit: with "enable.auto.commit" false only a Commit call
	// sends stored offsets).
	uncommitted map[ast.Node]bool
	// ackChans maps the commit channels of a hand-off (a struct field of
	// channel type: entity.Message.CommitCh) to the ack the receive loop
	// makes once a worker closes it (see ackChanFields).
	ackChans map[*types.Var]string
	// saramaCommits says whether the package, or a package of the module
	// it imports or that imports it, commits Sarama offsets (a session's
	// or an offset manager's Commit); saramaLoops whether the module has a
	// Sarama ConsumeClaim entry point (see saramaNeverCommits).
	saramaCommits, saramaLoops bool
	// kgoAutoCommit says the package's franz-go poll loops run on the
	// client's auto-commit (see wholeProgram.kgoAutoCommitFor).
	kgoAutoCommit bool
	// configMaps names the functions of the checked module that build and
	// return a confluent-kafka-go ConfigMap: true when their package never
	// turns the background commit off (see configMapBuilders).
	configMaps map[string]bool
	// guarded and unguarded mark the functions some walk reaches only
	// below a won guarded transition (see guardedAt), and those some walk
	// reaches without one.
	guarded, unguarded map[ast.Node]bool
}

func newProgramReach() *programReach {
	return &programReach{nodes: map[ast.Node]*reached{}, funcs: map[*types.Func]bool{}, works: map[*types.Func]bool{}, commitSites: map[token.Pos]bool{}, workSites: map[token.Pos]bool{}, kafkaAckSites: map[token.Pos]bool{}, ackSites: map[token.Pos]bool{}, listTakes: map[token.Pos]string{}, receiveSites: map[token.Pos]bool{}, effectSites: map[token.Pos]bool{}, nilErrSites: map[token.Pos]bool{}, readMessageSites: map[token.Pos]bool{}, lookupSites: map[token.Pos]bool{}, dedupe: map[*Root]bool{}, unacked: map[ast.Node]bool{}, uncommitted: map[ast.Node]bool{}, undeduped: map[*Root]map[ast.Node]bool{}, guarded: map[ast.Node]bool{}, unguarded: map[ast.Node]bool{}, absent: map[ast.Node]bool{}, present: map[ast.Node]bool{}}
}

// programs holds the whole-program result of the run in progress, by
// package, for [ConsumersAnalyzer] to pick up. Keys are the type-checked
// packages of one load, so concurrent runs do not meet.
var programs sync.Map // *types.Package -> *programReach

// wholeProgram is one run's SSA program and call graph.
type wholeProgram struct {
	prog    *ssa.Program
	info    map[*types.Package]*packages.Package
	app     map[*types.Package]bool
	cg      *callgraph.Graph
	syntax  map[ast.Node]*ssa.Function
	recvers map[string][]chanRecv // channel element type -> receivers
	// kgoHanded caches, per package that makes no franz-go client,
	// whether the clients its importers make run on their auto-commit
	// (see kgoAutoCommitFor).
	kgoHanded map[*types.Package]bool
	// sameChan joins the struct fields that hold one channel: a field
	// stored from another (Poller{events: d.events}) or from the same
	// make(chan) (a union-find forest; see joinChanFields).
	sameChan map[*types.Var]*types.Var
	// genRecvers maps a generator (a function that makes a channel,
	// sends on it from a goroutine and returns it: func Events() <-chan E)
	// to the functions that receive from what it returns.
	genRecvers map[*ssa.Function][]*ssa.Function
	// sinkRecvers maps a channel parameter (Consume(ctx, out chan<- E))
	// to the callers that make a channel, pass it there and receive from
	// it themselves: a loop that sends on out hands its messages to them.
	sinkRecvers map[*ssa.Parameter][]*ssa.Function
	// paramGens maps a channel parameter to the generators that make a
	// channel, pass it there (go r.consume(ctx, out)) and return it: a
	// send on the parameter goes to what receives from the generator.
	paramGens map[*ssa.Parameter][]*ssa.Function
	// ackChans are the hand-offs' commit channels (see ackChanFields): a
	// loop that sends a value holding one waits for its worker.
	ackChans map[*types.Var]string
	funcs    map[*ssa.Function]bool // the functions the call graph covers
	walks    []*rootWalk
}

// rootWalk is what one entry point reaches.
type rootWalk struct {
	root  *Root
	entry *ssa.Function
	// order lists the functions reached, breadth first, the entry first.
	order  []*ssa.Function
	parent map[*ssa.Function]*ssa.Function
	// via is the call site in the parent that leads to the function.
	via map[*ssa.Function]token.Pos
	// async marks the functions reached through a go statement or a
	// channel send: they run beside the consumer, which does not wait for
	// them before it acknowledges.
	async map[*ssa.Function]bool
}

// dedupeCovers reports whether the dedupe record d makes is on fn's path:
// one is an ancestor of the other on the walk, or their paths part in a
// common ancestor at two different call sites (dedupe(), then insert()).
// Paths that part at one call site reach two targets of it (a shared
// loop's handler function value bound to the customer handler in one
// service and to the notification handler in another): one handler's
// dedupe says nothing of the other's rows (field trial, wave 22:
// event-driven-crm H2).
func (rw *rootWalk) dedupeCovers(d, fn *ssa.Function) bool {
	up := map[*ssa.Function]token.Pos{} // fn's ancestors, each with the call site that leads down from it
	var site token.Pos
	for f, n := fn, 0; f != nil && n < 1000; f, n = rw.parent[f], n+1 {
		if _, seen := up[f]; seen {
			break
		}
		up[f] = site
		site = rw.via[f]
	}
	site = token.NoPos
	for f, n := d, 0; f != nil && n < 1000; f, n = rw.parent[f], n+1 {
		if fnSite, ok := up[f]; ok {
			// f is the lowest common ancestor: d is fn's ancestor
			// (site unset), fn is d's (fnSite unset), or they part here.
			return f == d || f == fn || !site.IsValid() || !fnSite.IsValid() || site != fnSite
		}
		site = rw.via[f]
	}
	return true // no common ancestor: keep the root-wide answer
}

// buildProgram builds SSA for pkgs and their dependencies and the call
// graph from the given entry points; app are the checked packages.
func buildProgram(pkgs []*packages.Package, roots []*Root, remotes []remote) *wholeProgram {
	// Function bodies are built for the checked packages only: a library's
	// internals are not the consumer's code (its effects are classified at
	// the call, by package), and building them costs most of the memory.
	// A function value handed to a library call (errgroup.Go, sync.Once.Do,
	// a retry helper) is taken as called by it: see walk.
	prog, ssaPkgs := ssautil.Packages(pkgs, ssa.InstantiateGenerics)
	for _, p := range ssaPkgs {
		if p != nil {
			p.Build()
		}
	}
	debugf("SSA built")
	w := &wholeProgram{
		prog:        prog,
		info:        map[*types.Package]*packages.Package{},
		app:         map[*types.Package]bool{},
		syntax:      map[ast.Node]*ssa.Function{},
		recvers:     map[string][]chanRecv{},
		sameChan:    map[*types.Var]*types.Var{},
		genRecvers:  map[*ssa.Function][]*ssa.Function{},
		sinkRecvers: map[*ssa.Parameter][]*ssa.Function{},
		paramGens:   map[*ssa.Parameter][]*ssa.Function{},
		kgoHanded:   map[*types.Package]bool{},
	}
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.Types == nil {
			return
		}
		w.info[p.Types] = p
	})
	for _, p := range pkgs {
		if p.Types != nil {
			w.app[p.Types] = true
		}
	}
	all := w.appFunctions(ssaPkgs)
	w.funcs = all
	instances := map[ast.Node][]*ssa.Function{} // a generic function's syntax -> its instances
	debugf("functions listed: %d", len(all))
	for fn := range all {
		if !w.inApp(fn) { // an instance of a generic function has no Pkg: its origin's
			continue
		}
		// Instances of a generic function share its syntax: keep the
		// function itself, else the instance first by name, so that every
		// run walks the same one (a map's order picked it; field trial,
		// wave 28: LinkMe's generic consumer reached its e-mail effect in
		// some runs only).
		if s := fn.Syntax(); s != nil && (fn.Origin() == nil || w.syntax[s] == nil || w.syntax[s].Origin() != nil && fn.String() < w.syntax[s].String()) {
			if _, ok := s.(*ast.RangeStmt); !ok {
				w.syntax[s] = fn
			}
		}
		if s := fn.Syntax(); s != nil && fn.Origin() != nil {
			instances[s] = append(instances[s], fn)
		}
	}
	// Channel hand-offs go to worker goroutines: a function (or closure)
	// started with a go statement in the module that receives from a
	// channel. A function that merely reads a control channel (a crash
	// notice, a done signal) in the caller's own flow is not a worker.
	workers := map[*ssa.Function]bool{}
	for fn := range all {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				if g, ok := in.(*ssa.Go); ok {
					if f := g.Call.StaticCallee(); f != nil {
						workers[f] = true
					}
					if mc, ok := g.Call.Value.(*ssa.MakeClosure); ok {
						workers[mc.Fn.(*ssa.Function)] = true
					}
				}
				// A goroutine started by a library: errgroup's
				// (*Group).Go(f), a pool's Go or Submit, go-zero's
				// RoutineGroup.Run and GoSafe.
				if c, ok := in.(*ssa.Call); ok {
					if f := c.Call.StaticCallee(); f != nil && len(f.Blocks) == 0 && libraryGoroutine(f) {
						for _, a := range c.Call.Args {
							switch a := a.(type) {
							case *ssa.Function:
								workers[a] = true
							case *ssa.MakeClosure:
								workers[a.Fn.(*ssa.Function)] = true
							}
						}
					}
				}
			}
		}
	}
	type entry struct {
		root *Root
		fn   *ssa.Function
	}
	var entries []entry
	for _, r := range roots {
		fn := w.syntax[r.Node]
		if fn == nil {
			continue
		}
		// An entry point that is a generic function (a Sarama handler
		// type Handler[T] shared by two consumer groups, each with its
		// own T and handle function) is one consumer per instance: each
		// is walked, and named with its type arguments (field trial,
		// wave 28: LinkMe's e-mail and SMS consumers, of which only one
		// was walked).
		if insts := instances[r.Node]; len(insts) > 1 {
			slices.SortFunc(insts, func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) })
			for _, inst := range insts {
				ri := *r
				ri.Name = shortName(inst)
				if strings.HasPrefix(ri.Name, inst.Origin().Pkg.Pkg.Name()+".") && r.Name != "func literal" {
					ri.Name = strings.TrimPrefix(ri.Name, inst.Origin().Pkg.Pkg.Name()+".")
				}
				entries = append(entries, entry{&ri, inst})
			}
			continue
		}
		if r.Name == "func literal" {
			r.Name = shortName(fn) // shop.Register.func1
		}
		entries = append(entries, entry{r, fn})
	}
	for _, r := range remotes {
		var fns []*ssa.Function
		if !r.iface && r.field == nil {
			fns = []*ssa.Function{prog.FuncValue(r.fn)}
		}
		switch {
		case r.field != nil:
			fns = w.storedIn(all, r.field)
		case r.iface:
			fns = implementations(all, r.fn)
		case r.factory:
			fns = w.madeBy(fns[0], 0)
		case r.method != "":
			fns = w.methodsMadeBy(fns[0], r.method)
		}
		for _, fn := range fns {
			if fn == nil || !w.inApp(fn) || fn.Syntax() == nil {
				continue
			}
			name := shortName(fn)
			if _, ok := fn.Syntax().(*ast.FuncDecl); ok {
				name = fn.Name()
			}
			entries = append(entries, entry{&Root{Kind: r.kind, Name: name, Node: fn.Syntax()}, fn})
		}
	}
	// One walk per function, the first root that names it.
	seenEntry := map[*ssa.Function]bool{}
	entries = slices.DeleteFunc(entries, func(e entry) bool {
		dup := seenEntry[e.fn]
		seenEntry[e.fn] = true
		return dup
	})
	if len(entries) == 0 {
		return w
	}
	// VTA over the checked packages' functions (only they have bodies
	// here; a library function is a leaf), refined once more from its own
	// graph. Every function of the checked packages takes part, reached or
	// not: the wiring (main storing an adapter in a service's interface
	// field) is where the types that flow into the consumer come from.
	// The first round starts from class hierarchy analysis over the
	// checked packages only: cha.CallGraph (and VTA's own default start)
	// enumerate every method of every type of the program, dependencies
	// included, minutes on a module with the AWS SDK.
	cha := appCHA(all)
	cg := vta.CallGraph(all, cha)
	debugf("VTA 1 done")
	cg = vta.CallGraph(all, cg)
	debugf("VTA 2 done")
	keepLostInvokes(cg, cha, w.app)
	w.cg = cg
	w.joinChanFields(all)
	w.ackChans = w.ackChanFields()
	// A worker receives in its own body or in a function it calls (a
	// Fetch method over the channel, called through an interface):
	// through three calls of the module's code, by the call graph (a
	// pipeline whose collector calls a stage that calls the reader).
	for fn := range workers {
		if !w.inApp(fn) {
			continue
		}
		seen := map[*ssa.Function]bool{fn: true}
		level := []*ssa.Function{fn}
		for depth := 0; depth <= 3 && len(level) > 0; depth++ {
			var next []*ssa.Function
			for _, g := range level {
				w.indexReceives(fn, g)
				if n := cg.Nodes[g]; n != nil {
					for _, e := range n.Out {
						if c := e.Callee.Func; w.inApp(c) && !seen[c] {
							seen[c] = true
							next = append(next, c)
						}
					}
				}
			}
			level = next
		}
	}
	// Receives from a generator's channel, anywhere in the module: the
	// receiving function is where the generator's values are handled.
	for fn := range all {
		if w.inApp(fn) {
			w.indexGeneratorReceives(fn)
		}
	}
	// Channels passed down to a loop that sends on them: the caller that
	// made the channel and receives from it is where its values are
	// handled.
	for fn := range all {
		if w.inApp(fn) {
			w.indexSinkReceives(fn)
			w.indexParamGenerators(fn)
		}
	}
	// The indexes were filled in the map order of all: put each list in a
	// fixed order, so that the first function to reach another (the path a
	// finding prints) is the same from run to run.
	byName := func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) }
	for _, rs := range w.recvers {
		slices.SortFunc(rs, func(a, b chanRecv) int { return byName(a.worker, b.worker) })
	}
	for _, fs := range w.genRecvers {
		slices.SortFunc(fs, byName)
	}
	for _, m := range []map[*ssa.Parameter][]*ssa.Function{w.sinkRecvers, w.paramGens} {
		for _, fs := range m {
			slices.SortFunc(fs, byName)
		}
	}
	// A one-shot receive wrapper with no caller in its own package
	// (kafka_queue.Queue.Receive) stands for the loops in other packages
	// that call it: they are the consumers. A loop that only gathers a
	// batch it returns (collectsBatch) stands for the loops that call it.
	var expanded []entry
	for _, e := range entries {
		if !e.root.wrapper {
			expanded = append(expanded, e)
			continue
		}
		callers := w.loopCallers(e.fn, 3)
		if len(callers) == 0 {
			expanded = append(expanded, e)
			continue
		}
		for i := 0; i < len(callers); i++ {
			c := callers[i]
			if fd, ok := c.Syntax().(*ast.FuncDecl); ok && w.pkgInfo(c) != nil && collectsBatch(w.pkgInfo(c).TypesInfo, fd) {
				if up := w.loopCallers(c, 3); len(up) > 0 {
					callers = append(callers, up...) // its loop gathers one batch: the caller's loop is the consumer's
					continue
				}
			}
			if seenEntry[c] {
				continue
			}
			seenEntry[c] = true
			expanded = append(expanded, entry{&Root{Kind: e.root.Kind, Name: shortName(c), Node: c.Syntax(), lifted: true}, c})
		}
	}
	entries = expanded
	// Walk in source order: the first walk to reach a function names its
	// consumer in findings, and the roots arrive in the order the
	// packages' analyses finished (field trial, wave 31: a publish three
	// consumers reach named one path or another from run to run).
	slices.SortStableFunc(entries, func(a, b entry) int {
		pa, pb := w.prog.Fset.Position(a.root.Node.Pos()), w.prog.Fset.Position(b.root.Node.Pos())
		return cmp.Or(cmp.Compare(pa.Filename, pb.Filename), cmp.Compare(pa.Offset, pb.Offset), cmp.Compare(a.root.Name, b.root.Name))
	})
	for _, e := range entries {
		rw := w.walk(e.root, e.fn)
		w.walks = append(w.walks, rw)
		debugf("walk %s: %v", e.root.Name, rw.order)
	}
	return w
}

// loopCallers returns the module's functions that call fn, by the call
// graph, from inside a for or range loop of their own body, directly or
// through callers that do not loop (depth levels).
func (w *wholeProgram) loopCallers(fn *ssa.Function, depth int) []*ssa.Function {
	n := w.cg.Nodes[fn]
	if depth == 0 || n == nil {
		return nil
	}
	var out []*ssa.Function
	for _, e := range n.In {
		c := e.Caller.Func
		if c != fn && c.Synthetic != "" && c.Syntax() == nil && srcPkg(c) == nil {
			// Go's pointer wrapper of a value method, called through an
			// interface that holds a pointer (wave 33, organic-cache's
			// SQSGateway): its callers are the method's.
			for _, up := range w.loopCallers(c, depth) {
				if !slices.Contains(out, up) {
					out = append(out, up)
				}
			}
			continue
		}
		if c == fn || !w.inApp(c) || c.Syntax() == nil || e.Site == nil || slices.Contains(out, c) {
			continue
		}
		if inLoop(c.Syntax(), e.Site.Pos()) {
			out = append(out, c)
			continue
		}
		if p := c.Parent(); p != nil {
			// A function literal that does not loop is its enclosing
			// function's code, wherever it is called from: a callback
			// handed to a retry or a circuit breaker (`breaker.Execute(ctx,
			// func(ctx) error { jobs, err = q.Receive(ctx) })`), whose
			// results the enclosing function hands to the work (field
			// trial, wave 43: Messanger's pollAndProcess under a ticker
			// loop).
			at := c.Syntax().Pos()
			for p.Parent() != nil {
				at, p = p.Syntax().Pos(), p.Parent()
			}
			if p == fn || !w.inApp(p) || p.Syntax() == nil || slices.Contains(out, p) {
				continue
			}
			if inLoop(p.Syntax(), at) {
				out = append(out, p)
				continue
			}
			out = append(out, w.loopCallers(p, depth-1)...)
			continue
		}
		out = append(out, w.loopCallers(c, depth-1)...)
	}
	return out
}

// inLoop reports whether pos, a call in the function fnNode, sits inside a
// for or range statement of that function (not of a function literal
// nested in it).
func inLoop(fnNode ast.Node, pos token.Pos) bool {
	looped := false
	ast.Inspect(fnNode, func(n ast.Node) bool {
		// Only the nodes around pos are entered.
		if n == nil || n.Pos() > pos || n.End() <= pos {
			return false
		}
		if _, ok := n.(*ast.FuncLit); ok && n != fnNode {
			return false
		}
		switch n.(type) {
		case *ast.ForStmt, *ast.RangeStmt:
			looped = true
		}
		return true
	})
	return looped
}

// implementations returns the methods among fns, in a fixed order, that
// implement m, an interface's method: same name, and a receiver type
// (or its pointer) that implements the interface.
func implementations(fns map[*ssa.Function]bool, m *types.Func) []*ssa.Function {
	iface, ok := m.Type().(*types.Signature).Recv().Type().Underlying().(*types.Interface)
	if !ok {
		return nil
	}
	var out []*ssa.Function
	for fn := range fns {
		recv := fn.Signature.Recv()
		if recv == nil || fn.Name() != m.Name() || fn.Synthetic != "" || types.IsInterface(recv.Type()) {
			continue
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if types.Implements(t, iface) || types.Implements(types.NewPointer(t), iface) {
			out = append(out, fn)
		}
	}
	slices.SortFunc(out, func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

// appFunctions lists the checked packages' functions: package-level
// functions, the methods of their types (value and pointer receivers), the
// closures inside them, and the instances of their generic functions that
// their code calls. (ssautil.AllFunctions walks every type of the program,
// dependencies included: tens of seconds on a large module.)
func (w *wholeProgram) appFunctions(pkgs []*ssa.Package) map[*ssa.Function]bool {
	out := map[*ssa.Function]bool{}
	var add func(fn *ssa.Function)
	add = func(fn *ssa.Function) {
		if fn == nil || out[fn] {
			return
		}
		out[fn] = true
		for _, a := range fn.AnonFuncs {
			add(a)
		}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				// A method value (h.onMessage) or expression ((*T).m) used
				// as a value is a synthetic wrapper (a bound method
				// closure, a thunk) that calls the method: without it in
				// the graph a walk that reaches the wrapper stops there.
				for _, op := range in.Operands(nil) {
					if op == nil || *op == nil {
						continue
					}
					var f *ssa.Function
					switch v := (*op).(type) {
					case *ssa.Function:
						f = v
					case *ssa.MakeClosure:
						f, _ = v.Fn.(*ssa.Function)
					}
					if f != nil && f.Synthetic != "" && len(f.Blocks) > 0 {
						add(f)
					}
				}
				// A generic type's instance converted to an interface
				// (&Handler[Ev]{fn: c.consume} given as a Sarama
				// ConsumerGroupHandler): its methods are called through
				// the interface, so their instances are the module's too.
				if mi, ok := in.(*ssa.MakeInterface); ok && instantiated(mi.X.Type()) {
					ms := w.prog.MethodSets.MethodSet(mi.X.Type())
					for i := range ms.Len() {
						if f := w.prog.MethodValue(ms.At(i)); f != nil && w.inApp(f) {
							add(f)
						}
					}
				}
				call, ok := in.(ssa.CallInstruction)
				if !ok {
					continue
				}
				if f := call.Common().StaticCallee(); f != nil && f.Origin() != nil && w.inApp(f) {
					add(f) // a generic instance
				}
			}
		}
	}
	for _, p := range pkgs {
		if p == nil {
			continue
		}
		for _, m := range p.Members {
			switch m := m.(type) {
			case *ssa.Function:
				add(m)
			case *ssa.Type:
				for _, t := range []types.Type{m.Type(), types.NewPointer(m.Type())} {
					if _, isIface := m.Type().Underlying().(*types.Interface); isIface {
						continue
					}
					if named, ok := m.Type().(*types.Named); ok && named.TypeParams().Len() > 0 {
						continue // methods of generic types come as instances
					}
					ms := w.prog.MethodSets.MethodSet(t)
					for i := range ms.Len() {
						add(w.prog.MethodValue(ms.At(i)))
					}
				}
			}
		}
	}
	return out
}

// instantiated reports whether t, or the type t points to, is an
// instance of a generic named type (Handler[Ev]).
func instantiated(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.TypeArgs().Len() > 0
}

// isWrapper reports whether fn is a synthetic wrapper (a bound method, a
// thunk), not code of the module's own: an instance of a generic function
// is synthetic too, but its body is its origin's.
func isWrapper(fn *ssa.Function) bool { return fn.Synthetic != "" && fn.Origin() == nil }

// keepLostInvokes gives back, from the class-hierarchy graph cha, the
// callees of each call of a method of one of the application's own
// interfaces (declared in a package of app) for which VTA found none. VTA
// loses the types of a value received from a channel with "v, ok :=
// <-ch" or "for v := range ch" (the receive's tuple and the value taken
// from it are different nodes of its graph), so a worker ranging over a
// channel of jobs and calling job.Execute() reached nothing: the common
// shape of a worker pool. An interface of a library (io.Writer,
// context.Context) keeps VTA's answer.
func keepLostInvokes(cg, cha *callgraph.Graph, app map[*types.Package]bool) {
	for fn, n := range cha.Nodes {
		if fn == nil {
			continue
		}
		var have map[ssa.CallInstruction]bool
		if vn := cg.Nodes[fn]; vn != nil {
			have = map[ssa.CallInstruction]bool{}
			for _, e := range vn.Out {
				have[e.Site] = true
			}
		}
		for _, e := range n.Out {
			c := e.Site.Common()
			if !c.IsInvoke() || have[e.Site] {
				continue
			}
			named, ok := types.Unalias(c.Value.Type()).(*types.Named)
			if !ok || named.Obj().Pkg() == nil || !app[named.Obj().Pkg()] {
				continue
			}
			callgraph.AddEdge(cg.CreateNode(fn), e.Site, cg.CreateNode(e.Callee.Func))
		}
	}
}

// appCHA is a class-hierarchy call graph over fns: a static call goes to
// its callee, an interface method call to every method of that name in fns
// whose receiver implements the interface, and a call of a function value
// to every function in fns of an identical signature.
func appCHA(fns map[*ssa.Function]bool) *callgraph.Graph {
	g := callgraph.New(nil)
	methods := map[string][]*ssa.Function{}
	bySig := map[string][]*ssa.Function{}
	// Only a function used as a value (a closure, a function stored,
	// passed or returned) can be called through a function value: the
	// others' signatures would join every dynamic call of their shape
	// (func() error) to every such function, which made VTA's first round
	// take minutes on a module with many of them.
	// types.Implements, once per receiver type and interface: call sites
	// of a large interface (an AWS SDK client's, hundreds of methods) are
	// many, and each check walks the whole method set (minutes on
	// aws-node-termination-handler before this cache).
	type pair struct {
		t     types.Type
		iface *types.Interface
	}
	implCache := map[pair]bool{}
	implements := func(t types.Type, iface *types.Interface) bool {
		k := pair{t, iface}
		v, ok := implCache[k]
		if !ok {
			v = types.Implements(t, iface)
			implCache[k] = v
		}
		return v
	}
	valued := map[*ssa.Function]bool{}
	for fn := range fns {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				var vals []ssa.Value
				if call, ok := in.(ssa.CallInstruction); ok && call.Common().StaticCallee() != nil {
					vals = call.Common().Args // not the callee itself
				} else {
					for _, r := range in.Operands(nil) {
						if r != nil && *r != nil {
							vals = append(vals, *r)
						}
					}
				}
				for _, v := range vals {
					switch v := v.(type) {
					case *ssa.Function:
						valued[v] = true
					case *ssa.MakeClosure:
						valued[v.Fn.(*ssa.Function)] = true
					}
				}
			}
		}
	}
	for fn := range fns {
		if recv := fn.Signature.Recv(); recv != nil {
			methods[fn.Name()] = append(methods[fn.Name()], fn)
			continue
		}
		if !valued[fn] {
			continue
		}
		k := sigKey(fn.Signature)
		bySig[k] = append(bySig[k], fn)
	}
	for fn := range fns {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				call, ok := in.(ssa.CallInstruction)
				if !ok {
					continue
				}
				c := call.Common()
				switch {
				case c.StaticCallee() != nil:
					callgraph.AddEdge(g.CreateNode(fn), call, g.CreateNode(c.StaticCallee()))
				case c.IsInvoke():
					iface, ok := c.Value.Type().Underlying().(*types.Interface)
					if !ok {
						continue
					}
					for _, m := range methods[c.Method.Name()] {
						if implements(m.Signature.Recv().Type(), iface) {
							callgraph.AddEdge(g.CreateNode(fn), call, g.CreateNode(m))
						}
					}
				default:
					for _, f := range bySig[sigKey(c.Signature())] {
						callgraph.AddEdge(g.CreateNode(fn), call, g.CreateNode(f))
					}
				}
			}
		}
	}
	return g
}

// sigKey is a signature's shape without parameter and result names:
// func(log *logrus.Entry, m *kafka.Message) error and the function type
// func(*logrus.Entry, *kafka.Message) error it is called through are one
// shape (their type strings differ by the names).
func sigKey(sig *types.Signature) string {
	var b strings.Builder
	b.WriteString("func(")
	for i := range sig.Params().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := sig.Params().At(i).Type()
		if sig.Variadic() && i == sig.Params().Len()-1 {
			b.WriteString("...")
			// A slice, or a string (the builtin append's
			// append([]byte, string...)), or a type parameter whose core
			// type is one of them: only a slice has an element to show.
			if sl, ok := t.(*types.Slice); ok {
				t = sl.Elem()
			}
		}
		b.WriteString(types.TypeString(t, nil))
	}
	b.WriteString(") (")
	for i := range sig.Results().Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(types.TypeString(sig.Results().At(i).Type(), nil))
	}
	b.WriteString(")")
	return b.String()
}

// madeBy returns the functions a factory returns: func literals and
// functions in its return statements, through factories it calls.
func (w *wholeProgram) madeBy(fn *ssa.Function, depth int) []*ssa.Function {
	if fn == nil || depth > 2 {
		return nil
	}
	var out []*ssa.Function
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			ret, ok := in.(*ssa.Return)
			if !ok {
				continue
			}
			for _, v := range ret.Results {
				out = append(out, w.funcsOf(v, depth)...)
			}
		}
	}
	return out
}

// storedIn returns the module's functions stored in field (a composite
// literal's `Handler: func(...) {...}`, an assignment `h.Handler = f`; a
// method value stands for its method), in a fixed order.
func (w *wholeProgram) storedIn(all map[*ssa.Function]bool, field *types.Var) []*ssa.Function {
	var out []*ssa.Function
	for fn := range all {
		if !w.inApp(fn) {
			continue
		}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				st, ok := in.(*ssa.Store)
				if !ok {
					continue
				}
				fa, ok := st.Addr.(*ssa.FieldAddr)
				if !ok || structField(fa.X, fa.Field) != field {
					continue
				}
				for _, f := range w.funcsOf(st.Val, 0) {
					if m, ok := f.Object().(*types.Func); ok && f.Synthetic != "" {
						f = w.prog.FuncValue(m) // a bound method's wrapper
					}
					if f != nil && !slices.Contains(out, f) {
						out = append(out, f)
					}
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

// methodsMadeBy returns the method named name of each concrete type a
// constructor returns as an interface (return &msgTransfer{...} from a
// func returning kq.ConsumeHandler), through constructors it calls.
func (w *wholeProgram) methodsMadeBy(ctor *ssa.Function, name string) []*ssa.Function {
	var out []*ssa.Function
	var visit func(fn *ssa.Function, depth int)
	visit = func(fn *ssa.Function, depth int) {
		if fn == nil || depth > 2 {
			return
		}
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				ret, ok := in.(*ssa.Return)
				if !ok || len(ret.Results) == 0 {
					continue
				}
				switch v := ret.Results[0].(type) {
				case *ssa.MakeInterface:
					if sel := lookupMethod(fn.Prog.MethodSets.MethodSet(v.X.Type()), name); sel != nil {
						if m := fn.Prog.MethodValue(sel); m != nil && !slices.Contains(out, m) {
							out = append(out, m)
						}
					}
				case *ssa.Call:
					visit(v.Call.StaticCallee(), depth+1)
				}
			}
		}
	}
	visit(ctor, 0)
	return out
}

// lookupMethod returns the selection of the exported method name in ms.
func lookupMethod(ms *types.MethodSet, name string) *types.Selection {
	for i := range ms.Len() {
		if sel := ms.At(i); sel.Obj().Name() == name {
			return sel
		}
	}
	return nil
}

// funcsOf returns the functions a function-typed value is made from.
func (w *wholeProgram) funcsOf(v ssa.Value, depth int) []*ssa.Function {
	switch v := v.(type) {
	case *ssa.Function:
		return []*ssa.Function{v}
	case *ssa.MakeClosure:
		return []*ssa.Function{v.Fn.(*ssa.Function)}
	case *ssa.ChangeType:
		return w.funcsOf(v.X, depth)
	case *ssa.MakeInterface:
		return w.funcsOf(v.X, depth)
	case *ssa.Call:
		if f := v.Call.StaticCallee(); f != nil {
			return w.madeBy(f, depth+1)
		}
	}
	return nil
}

// indexReceives records worker as a receiver of the channel element types
// g (the worker or a function it calls) receives from.
func (w *wholeProgram) indexReceives(worker, g *ssa.Function) {
	add := func(ch ssa.Value) {
		r := chanRecv{worker, chanField(ch)}
		if k := fieldChanKey(ch); k != "" && !slices.Contains(w.recvers[k], r) {
			w.recvers[k] = append(w.recvers[k], r)
		}
	}
	eachReceive(g, add)
}

// eachReceive calls f with the channel of every receive in fn: a <-ch (a
// range over a channel too) and a select case that receives.
func eachReceive(fn *ssa.Function, f func(ch ssa.Value)) {
	for _, b := range fn.Blocks {
		for _, in := range b.Instrs {
			switch in := in.(type) {
			case *ssa.UnOp:
				if in.Op == token.ARROW {
					f(in.X)
				}
			case *ssa.Select:
				for _, st := range in.States {
					if st.Dir == types.RecvOnly {
						f(st.Chan)
					}
				}
			}
		}
	}
}

// indexGeneratorReceives records fn as a receiver of every generator whose
// returned channel it receives from (<-g(), range g(), a select case).
func (w *wholeProgram) indexGeneratorReceives(fn *ssa.Function) {
	add := func(ch ssa.Value) {
		for {
			ct, ok := ch.(*ssa.ChangeType)
			if !ok {
				break
			}
			ch = ct.X
		}
		call, ok := ch.(*ssa.Call)
		if !ok {
			return
		}
		g := call.Call.StaticCallee()
		if g == nil || !w.inApp(g) || slices.Contains(w.genRecvers[g], fn) {
			return
		}
		w.genRecvers[g] = append(w.genRecvers[g], fn)
	}
	eachReceive(fn, add)
}

// indexSinkReceives records fn as a receiver of the channel parameters of
// the functions it calls (a go statement too, through an interface too)
// with a channel it makes and receives from itself or in its closures.
func (w *wholeProgram) indexSinkReceives(fn *ssa.Function) {
	received := map[*ssa.MakeChan]bool{}
	for _, f := range append([]*ssa.Function{fn}, fn.AnonFuncs...) {
		eachReceive(f, func(ch ssa.Value) {
			if mk := madeChan(ch); mk != nil {
				received[mk] = true
			}
		})
	}
	if len(received) == 0 {
		return
	}
	w.eachParamArg(fn, func(p *ssa.Parameter, a ssa.Value) {
		if mk := madeChan(a); mk != nil && received[mk] && !slices.Contains(w.sinkRecvers[p], fn) {
			w.sinkRecvers[p] = append(w.sinkRecvers[p], fn)
		}
	})
}

// indexParamGenerators records fn as the generator of the channel
// parameters of the functions it calls (a go statement too) with a channel
// it makes and returns (see generatorOf).
func (w *wholeProgram) indexParamGenerators(fn *ssa.Function) {
	w.eachParamArg(fn, func(p *ssa.Parameter, a ssa.Value) {
		if generatorOf(a) == fn && !slices.Contains(w.paramGens[p], fn) {
			w.paramGens[p] = append(w.paramGens[p], fn)
		}
	})
}

// eachParamArg calls f with each parameter of a module function fn calls
// (by the call graph: a go statement and an interface call too) and the
// argument fn passes to it.
func (w *wholeProgram) eachParamArg(fn *ssa.Function, f func(p *ssa.Parameter, a ssa.Value)) {
	n := w.cg.Nodes[fn]
	if n == nil {
		return
	}
	for _, e := range n.Out {
		callee := e.Callee.Func
		if callee == nil || !w.inApp(callee) {
			continue
		}
		off := 0
		if e.Site.Common().IsInvoke() {
			off = 1 // the receiver is Value, not in Args
		}
		for i, a := range e.Site.Common().Args {
			if i+off < len(callee.Params) {
				f(callee.Params[i+off], a)
			}
		}
	}
}

// sinkParam returns the parameter a send's channel is, through
// conversions, or nil.
func sinkParam(ch ssa.Value) *ssa.Parameter {
	for {
		switch x := ch.(type) {
		case *ssa.ChangeType:
			ch = x.X
		case *ssa.Parameter:
			return x
		default:
			return nil
		}
	}
}

// generatorOf returns the function that makes the channel ch (a send's
// channel, seen in the function or closure sending on it) and returns it
// to its callers, or nil: the channel is made by a MakeChan in that
// function, reached from the send directly or through a closure's free
// variable (captured by value or by reference), and one of its Return
// instructions returns it.
func generatorOf(ch ssa.Value) *ssa.Function {
	mk := madeChan(ch)
	if mk == nil {
		return nil
	}
	maker := mk.Parent()
	for _, b := range maker.Blocks {
		for _, in := range b.Instrs {
			if ret, ok := in.(*ssa.Return); ok {
				for _, r := range ret.Results {
					if madeChan(r) == mk {
						return maker
					}
				}
			}
		}
	}
	return nil
}

// libraryGoroutine reports whether the library function f runs the
// function value it is given in a goroutine of its own: any Go or Submit
// (errgroup, conc, ants), and go-zero's (see goZeroGoroutine).
func libraryGoroutine(f *ssa.Function) bool {
	if f.Name() == "Go" || f.Name() == "Submit" {
		return true
	}
	fn, ok := f.Object().(*types.Func)
	return ok && goZeroGoroutine(fn)
}

// goZeroGoroutine reports whether fn is one of go-zero's core/threading
// helpers that run a function in a new goroutine: RoutineGroup.Run and
// RunSafe, GoSafe and GoSafeCtx, which go-queue's kq consumes with (field
// trial, wave 37: scooter-WSVA's copy of kq). threading.RunSafe runs it in
// the caller's goroutine.
func goZeroGoroutine(fn *types.Func) bool {
	if fn.Pkg() == nil || fn.Pkg().Path() != pathGoZero+"/core/threading" {
		return false
	}
	switch fn.Name() {
	case "Run", "RunSafe":
		return recvName(fn) == "RoutineGroup"
	case "GoSafe", "GoSafeCtx":
		return true
	}
	return false
}

// madeChan follows a channel value back to the make(chan) it holds:
// through conversions, loads of a variable stored once, and a closure's
// free variables; nil when it comes from anywhere else.
func madeChan(v ssa.Value) *ssa.MakeChan {
	for range 8 {
		switch x := v.(type) {
		case *ssa.MakeChan:
			return x
		case *ssa.ChangeType:
			v = x.X
		case *ssa.UnOp:
			if x.Op != token.MUL {
				return nil
			}
			v = x.X
		case *ssa.Alloc:
			var stored ssa.Value
			for _, ref := range *x.Referrers() {
				if st, ok := ref.(*ssa.Store); ok && st.Addr == ssa.Value(x) {
					if stored != nil {
						return nil // assigned more than once
					}
					stored = st.Val
				}
			}
			if stored == nil {
				return nil
			}
			v = stored
		case *ssa.FreeVar:
			fn := x.Parent()
			idx := slices.Index(fn.FreeVars, x)
			if idx < 0 || fn.Parent() == nil {
				return nil
			}
			var bound ssa.Value
			for _, b := range fn.Parent().Blocks {
				for _, in := range b.Instrs {
					if mc, ok := in.(*ssa.MakeClosure); ok && mc.Fn == ssa.Value(fn) && idx < len(mc.Bindings) {
						bound = mc.Bindings[idx]
					}
				}
			}
			if bound == nil {
				return nil
			}
			v = bound
		default:
			return nil
		}
	}
	return nil
}

// chanRecv is a receiver of a channel element type: the worker, and the
// struct field it receives the channel from (nil for a local or a
// parameter).
type chanRecv struct {
	worker *ssa.Function
	field  *types.Var
}

// pairs reports whether a send on a channel read from field sf reaches r:
// two struct fields are two channels unless they hold one (see
// joinChanFields); a channel held in a local or a parameter may be any of
// its type, except a channel of `any`, which pairs by its fields only.
func (w *wholeProgram) pairs(r chanRecv, sf *types.Var, key string) bool {
	if key == anyChanKey {
		return r.field != nil && sf != nil && w.chanRoot(r.field) == w.chanRoot(sf)
	}
	return r.field == nil || sf == nil || w.chanRoot(r.field) == w.chanRoot(sf)
}

// anyChanKey keys a channel of an interface with no method (`any`) held
// in a struct field: a worker pool's `tasks chan interface{}`. Such
// channels pair by field only: by type, every `chan any` would meet every
// other (field trial, wave 32: Ads-service's worker pool).
const anyChanKey = "any (by field)"

// fieldChanKey is chanKey of ch's type, or anyChanKey for a channel of
// `any` (an interface of no method) read from a struct field.
func fieldChanKey(ch ssa.Value) string {
	if k := chanKey(ch.Type()); k != "" {
		return k
	}
	if c, ok := ch.Type().Underlying().(*types.Chan); ok && chanField(ch) != nil {
		if it, ok := c.Elem().Underlying().(*types.Interface); ok && it.NumMethods() == 0 {
			return anyChanKey
		}
	}
	return ""
}

// heldIn returns the struct field a channel value comes from: a load of
// the field, or the result of a getter that returns one (d.Events()).
func (w *wholeProgram) heldIn(v ssa.Value) *types.Var {
	if f := chanField(v); f != nil {
		return f
	}
	call, ok := v.(*ssa.Call)
	if !ok {
		return nil
	}
	g := call.Call.StaticCallee()
	if g == nil || !w.inApp(g) {
		return nil
	}
	for _, b := range g.Blocks {
		for _, in := range b.Instrs {
			if ret, ok := in.(*ssa.Return); ok && len(ret.Results) == 1 {
				if f := chanField(ret.Results[0]); f != nil {
					return f
				}
			}
		}
	}
	return nil
}

// passedFields returns the struct fields whose channels the static
// callers of fn pass as its parameter prm.
func (w *wholeProgram) passedFields(fn *ssa.Function, prm *ssa.Parameter) []*types.Var {
	var out []*types.Var
	for _, a := range w.passedArgs(fn, prm) {
		if f := w.heldIn(a); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// passedMakes returns the make(chan) calls whose channels the static
// callers of fn pass as its parameter prm (see madeChan).
func (w *wholeProgram) passedMakes(fn *ssa.Function, prm *ssa.Parameter) []*ssa.MakeChan {
	var out []*ssa.MakeChan
	for _, a := range w.passedArgs(fn, prm) {
		if mk := madeChan(a); mk != nil {
			out = append(out, mk)
		}
	}
	return out
}

// passedArgs returns the arguments the static callers of fn pass as its
// parameter prm (calls through an interface are not static).
func (w *wholeProgram) passedArgs(fn *ssa.Function, prm *ssa.Parameter) []ssa.Value {
	i := slices.Index(fn.Params, prm)
	n := w.cg.Nodes[fn]
	if i < 0 || n == nil {
		return nil
	}
	var out []ssa.Value
	for _, e := range n.In {
		c := e.Site.Common()
		if !c.IsInvoke() && i < len(c.Args) {
			out = append(out, c.Args[i])
		}
	}
	return out
}

// chanRoot returns the representative of the fields that hold one channel
// with f (see joinChanFields).
func (w *wholeProgram) chanRoot(f *types.Var) *types.Var {
	for {
		p, ok := w.sameChan[f]
		if !ok || p == f {
			return f
		}
		f = p
	}
}

// joinChanFields joins the struct fields that hold one channel: a field
// stored from another field (`p := &Poller{events: d.events}`) or from a
// make(chan) another field holds too. A send on one then reaches the
// receivers of the other (field trial, wave 32: reservation-worker's
// poller and dispatcher, nexrad-aws-notifier).
func (w *wholeProgram) joinChanFields(all map[*ssa.Function]bool) {
	byMake := map[*ssa.MakeChan]*types.Var{}
	join := func(a, b *types.Var) {
		ra, rb := w.chanRoot(a), w.chanRoot(b)
		if ra != rb {
			w.sameChan[rb] = ra
		}
	}
	fns := make([]*ssa.Function, 0, len(all))
	for fn := range all {
		if w.inApp(fn) {
			fns = append(fns, fn)
		}
	}
	slices.SortFunc(fns, func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) })
	for _, fn := range fns {
		for _, b := range fn.Blocks {
			for _, in := range b.Instrs {
				st, ok := in.(*ssa.Store)
				if !ok {
					continue
				}
				fa, ok := st.Addr.(*ssa.FieldAddr)
				if !ok {
					continue
				}
				if _, isChan := st.Val.Type().Underlying().(*types.Chan); !isChan {
					continue
				}
				to := structField(fa.X, fa.Field)
				if to == nil {
					continue
				}
				if from := w.heldIn(st.Val); from != nil {
					join(from, to)
				} else if prm, ok := st.Val.(*ssa.Parameter); ok {
					// A constructor's parameter (NewPoller(d.Events())):
					// the fields its callers pass.
					for _, from := range w.passedFields(fn, prm) {
						join(from, to)
					}
					// Or the make(chan) they pass, which another
					// constructor stores too (registerPipeline's
					// input, given to NewPipeline and to Register).
					for _, mk := range w.passedMakes(fn, prm) {
						if other, ok := byMake[mk]; ok {
							join(other, to)
						} else {
							byMake[mk] = to
						}
					}
				} else if mk := madeChan(st.Val); mk != nil {
					if other, ok := byMake[mk]; ok {
						join(other, to)
					} else {
						byMake[mk] = to
					}
				}
			}
		}
	}
}

// kgoAutoCommitAt reports whether the franz-go loop entry runs on its
// client's auto-commit: judged by the client entry makes in its own body
// when it makes one (see kgoClientIn), else by its package (see
// kgoAutoCommitFor).
func (w *wholeProgram) kgoAutoCommitAt(entry *ssa.Function) bool {
	if entry.Pkg == nil {
		return false
	}
	if p := w.info[entry.Pkg.Pkg]; p != nil {
		var body *ast.BlockStmt
		switch n := entry.Syntax().(type) {
		case *ast.FuncDecl:
			body = n.Body
		case *ast.FuncLit:
			body = n.Body
		}
		if made, auto := kgoClientIn(p.TypesInfo, body); made {
			return auto
		}
	}
	return w.kgoAutoCommitFor(entry.Pkg.Pkg)
}

// kgoAutoCommitFor reports whether pkg's franz-go loops run on the
// client's auto-commit: pkg makes a client (kgo.NewClient) and never turns
// the auto-commit off (DisableAutoCommit) or down to marks
// (AutoCommitMarks); or pkg makes no client, and the packages of the
// module that import it and make one never turn it off either: the client
// made in main and handed to the loop's constructor (field trial, wave 59:
// rtsa_webgpu's training and audit consumers).
func (w *wholeProgram) kgoAutoCommitFor(pkg *types.Package) bool {
	p := w.info[pkg]
	if p == nil {
		return false
	}
	if made, _ := kgoClientOptions(p.TypesInfo, p.Syntax); made {
		return kgoAutoCommitsIn(p.TypesInfo, p.Syntax)
	}
	if auto, ok := w.kgoHanded[pkg]; ok {
		return auto
	}
	made, off := false, false
	for q := range w.app {
		qp := w.info[q]
		if qp == nil || !slices.Contains(q.Imports(), pkg) {
			continue
		}
		m, o := kgoClientOptions(qp.TypesInfo, qp.Syntax)
		made, off = made || m, off || o
	}
	w.kgoHanded[pkg] = made && !off
	return made && !off
}

// chanField returns the struct field a channel value was loaded from
// (s.jobs, (*s).jobs), or nil.
func chanField(v ssa.Value) *types.Var {
	var x ssa.Value
	var i int
	switch v := v.(type) {
	case *ssa.UnOp:
		fa, ok := v.X.(*ssa.FieldAddr)
		if v.Op != token.MUL || !ok {
			return nil
		}
		x, i = fa.X, fa.Field
	case *ssa.Field:
		x, i = v.X, v.Field
	default:
		return nil
	}
	return structField(x, i)
}

// structField returns field i of the struct x is or points to, or nil.
func structField(x ssa.Value, i int) *types.Var {
	t := x.Type()
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	st, ok := t.Underlying().(*types.Struct)
	if !ok || i >= st.NumFields() {
		return nil
	}
	return st.Field(i).Origin()
}

// chanKey is the key of a channel's element type for pairing sends with
// receives: "" for element types that carry no message (signals, errors,
// basic values, empty structs).
func chanKey(t types.Type) string {
	ch, ok := t.Underlying().(*types.Chan)
	if !ok {
		return ""
	}
	e := types.Unalias(ch.Elem())
	switch u := e.Underlying().(type) {
	case *types.Basic:
		return ""
	case *types.Struct:
		if u.NumFields() == 0 {
			return ""
		}
	case *types.Interface:
		if u.NumMethods() <= 1 { // error, fmt.Stringer, any
			return ""
		}
	}
	s := types.TypeString(e, nil)
	if s == "os.Signal" || s == "time.Time" {
		return ""
	}
	return s
}

// walk follows the call graph and channel hand-offs from one entry point.
func (w *wholeProgram) walk(root *Root, entry *ssa.Function) *rootWalk {
	rw := &rootWalk{root: root, entry: entry, parent: map[*ssa.Function]*ssa.Function{}, via: map[*ssa.Function]token.Pos{}, async: map[*ssa.Function]bool{}}
	type item struct {
		fn   *ssa.Function
		hops int // calls in a row outside the module
	}
	seen := map[*ssa.Function]bool{entry: true}
	queue := []item{{entry, 0}}
	visit := func(from *ssa.Function, to *ssa.Function, pos token.Pos, hops int, async bool) {
		if to == nil || seen[to] {
			return
		}
		if to.Pkg != nil && activeConfig().notEffect(to.Pkg.Pkg.Path()) {
			return // configured as no effect (not_effects): not followed
		}
		rw.async[to] = async || rw.async[from]
		if !w.inApp(to) && to.Synthetic == "" {
			hops++
		}
		if hops > libraryHops {
			return
		}
		if w.inApp(to) {
			hops = 0
		}
		seen[to] = true
		rw.parent[to] = from
		rw.via[to] = pos
		queue = append(queue, item{to, hops})
	}
	// Function values bound, in this walk, to the function-typed
	// parameters and free variables of the functions it reaches: a call
	// of such a parameter follows only what this consumer passed (the call
	// graph joins what every caller of a helper like updateInTx(fn) passes,
	// so one consumer would reach another's closure).
	bound := map[ssa.Value]map[*ssa.Function]bool{}
	type valueCall struct {
		from *ssa.Function
		pos  token.Pos
		hops int
		isGo bool
	}
	calls := map[ssa.Value][]valueCall{} // the calls of each such value met so far
	valueFuncs := func(v ssa.Value) []*ssa.Function {
		if u, ok := v.(*ssa.UnOp); ok && u.Op == token.MUL {
			if _, ok := u.X.(*ssa.FreeVar); ok {
				v = u.X // a variable captured by reference, loaded
			}
		}
		switch v.(type) {
		case *ssa.Parameter, *ssa.FreeVar:
			// In a fixed order: the first to reach a function names the
			// path a finding prints.
			return slices.SortedFunc(maps.Keys(bound[v]), func(a, b *ssa.Function) int { return cmp.Compare(a.String(), b.String()) })
		}
		// Depth 1: a value made by one factory call (g.Go(handle(ctx,
		// m)), as madeBy stops past its second level.
		return w.funcsOf(v, 1)
	}
	bindValue := func(v ssa.Value, fs []*ssa.Function) {
		for _, f := range fs {
			if bound[v] == nil {
				bound[v] = map[*ssa.Function]bool{}
			}
			if bound[v][f] {
				continue
			}
			bound[v][f] = true
			for _, c := range calls[v] { // met before this binding
				visit(c.from, f, c.pos, c.hops, c.isGo)
			}
		}
	}
	bindArgs := func(site ssa.CallInstruction, callee *ssa.Function) {
		if callee == nil || !w.inApp(callee) {
			return
		}
		off := 0
		if site.Common().IsInvoke() {
			off = 1 // the receiver is Value, not in Args
		}
		for i, a := range site.Common().Args {
			if i+off < len(callee.Params) && isSignature(a.Type()) {
				bindValue(callee.Params[i+off], valueFuncs(a))
			}
		}
	}
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		rw.order = append(rw.order, it.fn)
		if n := w.cg.Nodes[it.fn]; n != nil {
			done := map[ssa.CallInstruction]bool{}
			for _, e := range sortedOut(n) {
				_, isGo := e.Site.(*ssa.Go)
				if v := boundable(e.Site.Common().Value, it.fn); !e.Site.Common().IsInvoke() && v != nil && bound[v] != nil {
					// Bound in this walk: its functions, not the graph's.
					if !done[e.Site] {
						done[e.Site] = true
						calls[v] = append(calls[v], valueCall{it.fn, e.Pos(), it.hops, isGo})
						for _, f := range valueFuncs(v) {
							visit(it.fn, f, e.Pos(), it.hops, isGo)
						}
					}
					continue
				}
				bindArgs(e.Site, e.Callee.Func)
				visit(it.fn, e.Callee.Func, e.Pos(), it.hops, isGo)
			}
		}
		if !w.funcs[it.fn] && w.inApp(it.fn) {
			// Outside the graph (a method instance of a generic type
			// reached through an interface): follow its static calls.
			for _, b := range it.fn.Blocks {
				for _, in := range b.Instrs {
					if call, ok := in.(ssa.CallInstruction); ok {
						_, isGo := in.(*ssa.Go)
						visit(it.fn, call.Common().StaticCallee(), in.Pos(), it.hops, isGo)
					}
				}
			}
		}
		if !w.inApp(it.fn) {
			continue
		}
		for _, b := range it.fn.Blocks {
			for _, in := range b.Instrs {
				switch in := in.(type) {
				case *ssa.MakeClosure:
					fn := in.Fn.(*ssa.Function)
					for i, b := range in.Bindings {
						if i >= len(fn.FreeVars) {
							continue
						}
						if isSignature(b.Type()) {
							bindValue(fn.FreeVars[i], valueFuncs(b))
						} else if a, ok := b.(*ssa.Alloc); ok && isSignature(a.Type().(*types.Pointer).Elem()) {
							// Captured by reference: what is stored in it.
							for _, ref := range *a.Referrers() {
								if st, ok := ref.(*ssa.Store); ok && st.Addr == a {
									bindValue(fn.FreeVars[i], valueFuncs(st.Val))
								}
							}
						}
					}
				case *ssa.Send:
					for _, r := range w.sendTargets(in.Chan) {
						visit(it.fn, r, in.Pos(), 0, !w.waitedOn(in.X.Type()))
					}
				case *ssa.Select: // a send written as a select case
					for _, st := range in.States {
						if st.Dir != types.SendOnly {
							continue
						}
						for _, r := range w.sendTargets(st.Chan) {
							visit(it.fn, r, st.Pos, 0, !w.waitedOn(st.Send.Type()))
						}
					}
				case ssa.CallInstruction:
					// A function value passed to a library (no body
					// here, or a method of an interface the library
					// declares: a tracer's WithSpan) is taken as called
					// by it.
					cc := in.Common()
					if sf := poolCallee(cc); sf != nil && !w.app[sf.Pkg()] && !waitedTask(in) {
						// A worker pool's Submit (alitto/pond's, ants'):
						// the function runs in one of the pool's
						// goroutines, whatever the library does inside
						// (field trial, wave 39: software-engineering's
						// payment worker).
						for _, a := range cc.Args {
							for _, f := range valueFuncs(a) {
								visit(it.fn, f, in.Pos(), 0, true)
							}
						}
					}
					if cc.IsInvoke() {
						if m := cc.Method; m.Pkg() == nil || w.app[m.Pkg()] {
							continue
						}
					} else if f := cc.StaticCallee(); f == nil || len(f.Blocks) > 0 {
						continue
					}
					for _, a := range in.Common().Args {
						for _, f := range valueFuncs(a) {
							_, isGo := in.(*ssa.Go)
							// go-zero's RoutineGroup.Run runs it in a
							// goroutine of its own, as a go statement.
							var sf *types.Func
							if callee := cc.StaticCallee(); callee != nil {
								sf, _ = callee.Object().(*types.Func)
							}
							visit(it.fn, f, in.Pos(), 0, isGo || sf != nil && goZeroGoroutine(sf))
						}
					}
				}
			}
		}
	}
	return rw
}

// poolCallee returns the method a call calls when it is a worker pool's
// Submit (see poolSubmitNames; a method, by interface or not), nil
// otherwise.
func poolCallee(cc *ssa.CallCommon) *types.Func {
	var fn *types.Func
	if cc.IsInvoke() {
		fn = cc.Method
	} else if callee := cc.StaticCallee(); callee != nil {
		fn, _ = callee.Object().(*types.Func)
	}
	if fn == nil || fn.Pkg() == nil || !poolSubmitNames[fn.Name()] || recvName(fn) == "" {
		return nil
	}
	return fn
}

// waitedTask reports whether the result of a call (a worker pool's task,
// pond v2's Submit result) is waited for: a Wait method is called on it
// (`task := pool.Submit(f); return task.Wait()`).
func waitedTask(in ssa.CallInstruction) bool {
	v, ok := in.(*ssa.Call)
	if !ok || v.Referrers() == nil {
		return false
	}
	for _, ref := range *v.Referrers() {
		c, ok := ref.(ssa.CallInstruction)
		if !ok {
			continue
		}
		cc := c.Common()
		switch {
		case cc.IsInvoke() && cc.Value == v && cc.Method.Name() == "Wait":
			return true
		case !cc.IsInvoke() && len(cc.Args) > 0 && cc.Args[0] == v:
			if f := cc.StaticCallee(); f != nil && f.Name() == "Wait" && f.Signature.Recv() != nil {
				return true
			}
		}
	}
	return false
}

// sortedOut returns n's out edges by call position, then callee: VTA
// builds them in map order, and the first edge to reach a function names
// the path a finding prints.
func sortedOut(n *callgraph.Node) []*callgraph.Edge {
	return slices.SortedFunc(slices.Values(n.Out), func(a, b *callgraph.Edge) int {
		return cmp.Or(cmp.Compare(a.Pos(), b.Pos()), cmp.Compare(a.Callee.Func.String(), b.Callee.Func.String()))
	})
}

// sendTargets returns the functions that handle what is sent on ch: the
// workers receiving from a channel of its element type (and field), the
// readers of the generator that made it, the caller that passed it as a
// parameter and receives from it, and the readers of a generator that
// passed it.
func (w *wholeProgram) sendTargets(ch ssa.Value) []*ssa.Function {
	var out []*ssa.Function
	sf := chanField(ch)
	key := fieldChanKey(ch)
	for _, r := range w.recvers[key] {
		if w.pairs(r, sf, key) {
			out = append(out, r.worker)
		}
	}
	if g := generatorOf(ch); g != nil {
		out = append(out, w.genRecvers[g]...)
	}
	p := sinkParam(ch)
	out = append(out, w.sinkRecvers[p]...)
	for _, g := range w.paramGens[p] {
		out = append(out, w.genRecvers[g]...)
	}
	return out
}

// boundable returns the parameter or free variable of fn that v, the
// function value a call in fn calls, is (or is loaded from, for a variable
// captured by reference), or nil.
func boundable(v ssa.Value, fn *ssa.Function) ssa.Value {
	if u, ok := v.(*ssa.UnOp); ok && u.Op == token.MUL {
		v = u.X
	}
	switch v := v.(type) {
	case *ssa.Parameter:
		if v.Parent() == fn {
			return v
		}
	case *ssa.FreeVar:
		if v.Parent() == fn {
			return v
		}
	}
	return nil
}

// inApp reports whether fn belongs to a checked package.
func (w *wholeProgram) inApp(fn *ssa.Function) bool {
	if p := srcPkg(fn); p != nil {
		return w.app[p]
	}
	return false
}

// srcPkg returns the package whose code fn is: its own, or for an instance
// of a generic function or a closure in one (which have no package in
// SSA) its origin's; nil for a synthetic function of no package.
func srcPkg(fn *ssa.Function) *types.Package {
	if fn.Pkg == nil {
		if o := fn.Origin(); o != nil && o.Pkg != nil {
			return o.Pkg.Pkg
		}
		return nil
	}
	return fn.Pkg.Pkg
}

// pkgInfo returns the loaded package of fn's code (see srcPkg), nil if it
// is not one of the loaded packages.
func (w *wholeProgram) pkgInfo(fn *ssa.Function) *packages.Package {
	if p := srcPkg(fn); p != nil {
		return w.info[p]
	}
	return nil
}

// path returns the names from the walk's entry point to fn.
func (rw *rootWalk) path(fn *ssa.Function) []string {
	var out []string
	for f := fn; f != nil; f = rw.parent[f] {
		if f.Synthetic == "" {
			out = append(out, shortName(f))
		}
	}
	slices.Reverse(out)
	return out
}

// handWrittenCaller returns, for a position in a generated file that a
// walk reaches, the call in the application's own code that leads into
// the generated code (the consumer's q.CreateEvent(ctx, e) above sqlc's
// INSERT), and the files of that call's package; NoPos when no walk
// reaches the position (or w is nil: the per-package mode).
func (w *wholeProgram) handWrittenCaller(pos token.Pos) (token.Pos, []*ast.File) {
	if w == nil {
		return token.NoPos, nil
	}
	generated := func(fn *ssa.Function) bool {
		if o := fn.Origin(); o != nil {
			fn = o
		}
		if fn.Syntax() == nil || fn.Pkg == nil || w.info[fn.Pkg.Pkg] == nil {
			return false
		}
		return inGeneratedFile(w.info[fn.Pkg.Pkg].Syntax, fn.Syntax().Pos())
	}
	for _, rw := range w.walks {
		// The innermost function of the walk whose syntax holds pos.
		var in *ssa.Function
		for _, fn := range rw.order {
			n := fn.Syntax()
			if n == nil || pos < n.Pos() || pos >= n.End() {
				continue
			}
			if in == nil || n.End()-n.Pos() < in.Syntax().End()-in.Syntax().Pos() {
				in = fn
			}
		}
		if in == nil {
			continue
		}
		// Up to the first caller that is the code's own (not generated,
		// not a synthetic wrapper: a promoted method of goctl's custom
		// model embedding its generated default one).
		for f := in; f != nil && rw.parent[f] != nil; f = rw.parent[f] {
			up := rw.parent[f]
			if up.Syntax() == nil || generated(up) {
				continue
			}
			src := up
			if o := up.Origin(); o != nil {
				src = o
			}
			if !rw.via[f].IsValid() || src.Pkg == nil || w.info[src.Pkg.Pkg] == nil {
				break
			}
			return rw.via[f], w.info[src.Pkg.Pkg].Syntax
		}
	}
	return token.NoPos, nil
}

// indexTakes records in listTakes, in the package of the function that
// makes it, each destructive take (see destructiveTake) in the functions
// of rw, a Redis queue loop's walk: in the loop itself or in the code's
// own Pop behind an interface (field trial, wave 43: go-store's image
// worker).
func (w *wholeProgram) indexTakes(rw *rootWalk, reach func(*types.Package) *programReach) {
	for _, fn := range rw.order {
		if !w.inApp(fn) {
			continue
		}
		p := w.pkgInfo(fn)
		body := funcBody(fn.Syntax())
		if p == nil || p.TypesInfo == nil || body == nil || srcPkg(fn) == nil {
			continue
		}
		ast.Inspect(body, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok {
				return false // its own function on the walk
			}
			if c, ok := n.(*ast.CallExpr); ok && destructiveTake(p.TypesInfo, c) != "" {
				reach(srcPkg(fn)).listTakes[c.Lparen] = rw.root.Name
			}
			return true
		})
	}
}

// publish hands the walks' results to [ConsumersAnalyzer], by package; the
// returned function takes them back.
func (w *wholeProgram) publish() (done func()) {
	byPkg := map[*types.Package]*programReach{}
	// reachOf is the result for package p, made on first use.
	reachOf := func(p *types.Package) *programReach {
		if byPkg[p] == nil {
			byPkg[p] = newProgramReach()
		}
		return byPkg[p]
	}
	for _, rw := range w.walks {
		_, commitSites := w.commitsBelow(rw)
		works, workSites := w.doesWork(rw)
		_, kafkaAckSites := w.below(rw, func(info *types.Info, c *ast.CallExpr) bool { return kafkaAckIn(info, c) != "" })
		_, ackSites := w.below(rw, func(info *types.Info, c *ast.CallExpr) bool { return ackOf(info, c) != "" })
		_, receiveSites := w.below(rw, func(info *types.Info, c *ast.CallExpr) bool {
			fn := callee(info, c)
			return fn != nil && receives(fn)
		})
		_, effectSites := w.below(rw, func(info *types.Info, c *ast.CallExpr) bool { return effectOf(info, c) != "" })
		_, readMessageSites := w.below(rw, func(info *types.Info, c *ast.CallExpr) bool { return kafkaGoReadMessage(info, c) })
		_, lookupSites := w.below(rw, dbLookup)
		// A call below which a commit is reached: recorded in the package
		// of the function that makes the call.
		for _, sites := range []struct {
			from map[token.Pos]*ssa.Function
			to   func(*programReach) map[token.Pos]bool
		}{
			{commitSites, func(pr *programReach) map[token.Pos]bool { return pr.commitSites }},
			{workSites, func(pr *programReach) map[token.Pos]bool { return pr.workSites }},
			{kafkaAckSites, func(pr *programReach) map[token.Pos]bool { return pr.kafkaAckSites }},
			{ackSites, func(pr *programReach) map[token.Pos]bool { return pr.ackSites }},
			{receiveSites, func(pr *programReach) map[token.Pos]bool { return pr.receiveSites }},
			{effectSites, func(pr *programReach) map[token.Pos]bool { return pr.effectSites }},
			{readMessageSites, func(pr *programReach) map[token.Pos]bool { return pr.readMessageSites }},
			{lookupSites, func(pr *programReach) map[token.Pos]bool { return pr.lookupSites }},
		} {
			for pos, p := range sites.from {
				if !w.inApp(p) {
					continue
				}
				sites.to(reachOf(srcPkg(p)))[pos] = true
			}
		}
		for pos, p := range w.nilErrCalls(rw) {
			reachOf(srcPkg(p)).nilErrSites[pos] = true
		}
		if rw.root.Kind == KindRedisQueue && len(works) > 0 {
			w.indexTakes(rw, reachOf)
		}
		acks, always, tail := w.nilAcks(rw)
		behind := w.guardedWalk(rw)
		absent := w.absentWalk(rw)
		for _, fn := range rw.order {
			if !w.inApp(fn) {
				continue
			}
			src := fn
			if o := fn.Origin(); o != nil {
				src = o
			}
			node := src.Syntax()
			if node == nil || src.Pkg == nil {
				continue
			}
			if _, ok := node.(*ast.RangeStmt); ok {
				continue
			}
			pr := reachOf(src.Pkg.Pkg)
			if behind[fn] {
				pr.guarded[node] = true
			} else {
				pr.unguarded[node] = true
			}
			if absent[fn] {
				pr.absent[node] = true
			} else {
				pr.present[node] = true
			}
			// The first walk names the function's consumer, unless it
			// reached it behind a guard and this one does not: findings
			// name the path on which the work repeats.
			if prev := pr.nodes[node]; prev == nil || prev.behindGuard && !behind[fn] {
				pr.nodes[node] = &reached{root: rw.root, path: rw.path(fn), behindGuard: behind[fn]}
				if fn != rw.entry || strings.HasPrefix(acks[fn], autoCommitPrefix) {
					pr.nodes[node].acker, pr.nodes[node].ackAlways, pr.nodes[node].tail = acks[fn], always[fn], tail[fn]
				}
			}
			if obj, ok := src.Object().(*types.Func); ok {
				pr.funcs[obj] = true
				if works[fn] {
					pr.works[obj] = true
				}
			}
		}
	}
	for _, rw := range w.walks {
		var records []*ssa.Function
		for _, fn := range rw.order {
			src := fn
			if o := fn.Origin(); o != nil {
				src = o
			}
			if !w.inApp(fn) || src.Syntax() == nil || src.Pkg == nil || w.info[src.Pkg.Pkg] == nil {
				continue
			}
			if recordsEvent(w.info[src.Pkg.Pkg].TypesInfo, src.Syntax()) {
				records = append(records, fn)
			}
		}
		undeduped := map[ast.Node]bool{}
		if len(records) > 0 {
			for _, fn := range rw.order {
				if fn.Syntax() != nil && !slices.ContainsFunc(records, func(d *ssa.Function) bool { return rw.dedupeCovers(d, fn) }) {
					undeduped[fn.Syntax()] = true
				}
			}
		}
		acked, _ := w.walkAcks(rw)
		committed := w.walkCommits(rw)
		for _, pr := range byPkg {
			pr.dedupe[rw.root] = len(records) > 0
			pr.undeduped[rw.root] = undeduped
			// Instances of one generic entry point share its node: it
			// acks nowhere only if none of them acks.
			n := rw.root.Node
			if prev, ok := pr.unacked[n]; ok {
				pr.unacked[n], pr.uncommitted[n] = prev && !acked, pr.uncommitted[n] && !committed
			} else {
				pr.unacked[n], pr.uncommitted[n] = !acked, !committed
			}
		}
	}
	configMaps := w.configMapBuilders()
	saramaCommits, saramaLoops := w.saramaCommitsNear(), false
	for _, rw := range w.walks {
		saramaLoops = saramaLoops || rw.root.Kind == KindSarama
	}
	for pkg, pr := range byPkg {
		pr.configMaps = configMaps
		pr.ackChans = w.ackChans
		pr.saramaCommits, pr.saramaLoops = saramaCommits[pkg], saramaLoops
		pr.kgoAutoCommit = w.kgoAutoCommitFor(pkg)
		programs.Store(pkg, pr)
	}
	return func() {
		for pkg := range byPkg {
			programs.Delete(pkg)
		}
	}
}

// shortName names a function for paths: pkg.Func, pkg.Type.Method, and
// pkg.Func.funcN for a closure. An instance of a generic function names
// its type arguments without their packages (pkg.Func[Login],
// pkg.Handler[SMSEvent].ConsumeClaim): two instances are two consumers.
func shortName(fn *ssa.Function) string {
	if p := fn.Parent(); p != nil {
		return shortName(p) + ".func" + strings.TrimPrefix(fn.Name(), p.Name()+"$")
	}
	args := ""
	if o := fn.Origin(); o != nil {
		var names []string
		for _, t := range fn.TypeArgs() {
			names = append(names, types.TypeString(t, func(*types.Package) string { return "" }))
		}
		if len(names) > 0 {
			args = "[" + strings.Join(names, ", ") + "]"
		}
		fn = o
	}
	pkg := ""
	if fn.Pkg != nil {
		pkg = fn.Pkg.Pkg.Name() + "."
	} else if obj := fn.Object(); obj != nil && obj.Pkg() != nil {
		pkg = obj.Pkg().Name() + "."
	}
	if recv := fn.Signature.Recv(); recv != nil {
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			return pkg + n.Obj().Name() + args + "." + fn.Name()
		}
		return pkg + fn.Name()
	}
	return pkg + fn.Name() + args
}

// saramaCommitsNear returns the packages of the checked module that commit
// Sarama offsets themselves (IBM or Shopify: a ConsumerGroupSession's or an
// OffsetManager's Commit, or any other Sarama method whose name starts
// with Commit), or that import such a package of the module or are
// imported by one: a config's package and the consumer's that commits
// are near each other, two services of one repository are not.
func (w *wholeProgram) saramaCommitsNear() map[*types.Package]bool {
	commits := map[*types.Package]bool{}
	for _, p := range w.info {
		if p.Types == nil || !w.app[p.Types] || p.TypesInfo == nil {
			continue
		}
		for _, f := range p.Syntax {
			ast.Inspect(f, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if fn := callee(p.TypesInfo, c); fn != nil && (funcPath(fn) == "github.com/IBM/sarama" || funcPath(fn) == "github.com/Shopify/sarama") && strings.HasPrefix(fn.Name(), "Commit") {
						commits[p.Types] = true
					}
				}
				return !commits[p.Types]
			})
		}
	}
	near := map[*types.Package]bool{}
	for _, p := range w.info {
		if p.Types == nil || !w.app[p.Types] {
			continue
		}
		if commits[p.Types] {
			near[p.Types] = true
		}
		for _, imp := range p.Types.Imports() {
			if w.app[imp] && commits[imp] {
				near[p.Types] = true // it imports one that commits
			}
			if w.app[imp] && commits[p.Types] {
				near[imp] = true // one that commits imports it
			}
		}
	}
	return near
}
