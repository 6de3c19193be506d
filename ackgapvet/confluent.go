package ackgapvet

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/types"
	"maps"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// confluentAutoCommit is the autocommit check for confluent-kafka-go: a
// consumer made by kafka.NewConsumer with a ConfigMap that leaves
// "enable.auto.commit" on (librdkafka's default) commits what Poll and
// ReadMessage returned in the background, before the loop's work is done.
// Not reported: "enable.auto.commit" false, "enable.auto.offset.store" false
// (only offsets the loop stores are committed: earlyack judges where it
// stores them), a ConfigMap not written in this package (unknown) unless,
// in the whole-program mode, a function of the module builds and returns
// it with the commit left on (see configMapBuilders), and a package whose
// poll loops do no work after Poll/ReadMessage.
func confluentAutoCommit(pass *analysis.Pass, c *Consumers, r *reporter) {
	var creates []*ast.CallExpr
	var lits []*ast.CompositeLit
	setOff := setKeysOff(pass.TypesInfo, pass.Files) // ConfigMap.SetKey(<commit key>, false) somewhere
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				if t := pass.TypesInfo.TypeOf(n); t != nil && isConfluentType(t, "ConfigMap") {
					lits = append(lits, n)
				}
			case *ast.CallExpr:
				fn := callee(pass.TypesInfo, n)
				if fn == nil || !isConfluent(funcPath(fn)) {
					return true
				}
				if recvName(fn) == "" && fn.Name() == "NewConsumer" {
					creates = append(creates, n)
				}
			}
			return true
		})
	}
	if len(creates) == 0 {
		return
	}
	confluentNeverCommits(pass, c, r, creates, lits, setOff)
	if len(setOff) > 0 {
		return
	}
	work, at := confluentWork(pass, c)
	if work == "" {
		return
	}
	for _, call := range creates {
		lit := configMapLit(pass, call, lits)
		if lit == nil && !builtConfigMap(pass, c, call) || lit != nil && autoCommitOff(pass.TypesInfo, lit) {
			continue
		}
		r.report(call, SeverityOf(append(callNames(pass, at), work)...), fmt.Sprintf(
			`kafka.NewConsumer with "enable.auto.commit" on (the default) commits polled offsets in the background, before the poll loop's work (%s at line %d) is done: a crash loses messages; set "enable.auto.commit": false and call CommitMessage after the work (or "enable.auto.offset.store": false and StoreMessage after the work)`,
			work, pass.Fset.Position(at.Pos()).Line))
	}
}

// saramaNeverCommits reports, in the whole-program mode, a Sarama config
// whose Consumer.Offsets.AutoCommit.Enable is set to false in a module
// that has a ConsumeClaim, when no package near the config commits offsets
// itself (a session's or an offset manager's Commit; see
// saramaCommitsNear):
// MarkMessage only marks an offset in the client, and with the
// auto-commit off only Commit sends the marks to the broker, so the group
// never commits; every restart or rebalance starts again from
// Consumer.Offsets.Initial (Sarama's default OffsetNewest skips what
// arrived while it was down; OffsetOldest handles every retained message
// again). Field trial, wave 26: Cornerstone-backend H1.
func saramaNeverCommits(pass *analysis.Pass, c *Consumers, r *reporter) {
	if c.program == nil || c.program.saramaCommits || !c.program.saramaLoops {
		return
	}
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 || !isFalse(pass.TypesInfo, as.Rhs[0]) {
				return true
			}
			enable, ok := ast.Unparen(as.Lhs[0]).(*ast.SelectorExpr)
			if !ok || enable.Sel.Name != "Enable" {
				return true
			}
			auto, ok := ast.Unparen(enable.X).(*ast.SelectorExpr)
			if !ok || auto.Sel.Name != "AutoCommit" {
				return true
			}
			field, ok := pass.TypesInfo.ObjectOf(auto.Sel).(*types.Var)
			if !ok || field.Pkg() == nil || (field.Pkg().Path() != "github.com/IBM/sarama" && field.Pkg().Path() != "github.com/Shopify/sarama") {
				return true
			}
			r.report(as, SeverityMedium,
				neverCommitsPrefix+": Consumer.Offsets.AutoCommit.Enable = false, and nothing near this config commits offsets (no session's or offset manager's Commit): MarkMessage only marks offsets in the client, and every restart or rebalance starts again from Consumer.Offsets.Initial (OffsetNewest, the default, skips what arrived while it was down; OffsetOldest handles every retained message again); call session.Commit() after the marks (a ticker, or after each batch), or leave the auto-commit on: it commits only what was marked")
			return true
		})
	}
}

// commitTurnedOff reports whether files turn librdkafka's background
// commit or offset store off: a ConfigMap literal with
// "enable.auto.commit" or "enable.auto.offset.store" false, or a SetKey
// or Set call that sets one of them to false.
func commitTurnedOff(info *types.Info, files []*ast.File) bool {
	if len(setKeysOff(info, files)) > 0 {
		return true
	}
	off := false
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.CompositeLit); ok {
				if t := info.TypeOf(lit); t != nil && isConfluentType(t, "ConfigMap") && autoCommitOff(info, lit) {
					off = true
				}
			}
			return !off
		})
	}
	return off
}

// setKeysOff returns the keys ("enable.auto.commit",
// "enable.auto.offset.store") that a ConfigMap SetKey or Set call in files
// sets to false.
func setKeysOff(info *types.Info, files []*ast.File) map[string]bool {
	out := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok && len(call.Args) == 2 {
				if fn := callee(info, call); fn != nil && isConfluent(funcPath(fn)) && recvName(fn) == "ConfigMap" && (fn.Name() == "SetKey" || fn.Name() == "Set") {
					if k := constString(info, call.Args[0]); commitOffKey(k) && isFalse(info, call.Args[1]) {
						out[k] = true
					}
				}
			}
			return true
		})
	}
	return out
}

// confluentNeverCommits reports, in the whole-program mode, a consumer
// made with the background commit or the offset store turned off
// ("enable.auto.commit" or "enable.auto.offset.store" false, in its
// ConfigMap literal, or by SetKey in the package: setOff) when no poll loop of the
// package commits an offset anywhere on its walk (CommitMessage,
// CommitOffsets, Commit; with only the store off, StoreMessage and
// StoreOffsets count too) while one does work:
// the consumer group then never commits, so every restart or rebalance
// reads from "auto.offset.reset" again (librdkafka's default "latest"
// skips what arrived while it was down; "earliest" handles every retained
// message again). Field trial, wave 24: notification-service-go H1.
func confluentNeverCommits(pass *analysis.Pass, c *Consumers, r *reporter, creates []*ast.CallExpr, lits []*ast.CompositeLit, setOff map[string]bool) {
	if c.program == nil {
		return
	}
	info := pass.TypesInfo
	work, at := confluentWork(pass, c)
	if work == "" {
		return
	}
	for _, call := range creates {
		off := maps.Clone(setOff)
		if lit := configMapLit(pass, call, lits); lit != nil {
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok && commitOffKey(constString(info, kv.Key)) && isFalse(info, kv.Value) {
					off[constString(info, kv.Key)] = true
				}
			}
		}
		if len(off) == 0 {
			continue
		}
		// With the background commit off only a Commit call commits;
		// with only the store off, a StoreMessage is enough (the
		// background commit sends what is stored).
		none, key, what, fix := c.program.uncommitted, "enable.auto.commit", "commits (CommitMessage, CommitOffsets, Commit)", "commit it (CommitMessage) after its work"
		if !off["enable.auto.commit"] {
			none, key, what, fix = c.program.unacked, "enable.auto.offset.store", "stores or commits (StoreMessage, StoreOffsets, CommitMessage, CommitOffsets, Commit)", "store it (StoreMessage) after its work, and the background commit sends it"
		}
		loops := 0
		for node, root := range c.reach {
			if root.Kind != KindConfluent || root.Node != node {
				continue
			}
			if !none[node] {
				loops = -1 // a loop of the package commits (or stores)
				break
			}
			loops++
		}
		if loops <= 0 {
			continue
		}
		r.report(call, SeverityOf(append(callNames(pass, at), work)...), fmt.Sprintf(
			`%s: kafka.NewConsumer has %q false, and no poll loop here %s an offset though it does work (%s at line %d), so every restart or rebalance reads from "auto.offset.reset" again: with "earliest" every retained message is handled again, with "latest" (the default) what arrived while it was down is skipped; %s`,
			neverCommitsPrefix, key, what, work, pass.Fset.Position(at.Pos()).Line, fix))
	}
}

// neverCommitsPrefix starts the autocommit finding of a confluent-kafka-go
// consumer that never commits (see confluentNeverCommits): the consumer
// map does not take it for a background commit.
const neverCommitsPrefix = "the consumer group never commits"

// configMapBuilders returns, by function name, whether the functions of
// the checked module that return a ConfigMap they build (a literal, SetKey
// or Set calls, or a call of another function returning one) leave the
// background commit on: true when the package of every such function of
// that name sets neither "enable.auto.commit" nor "enable.auto.offset.store"
// to false anywhere (the package-wide reading of confluentAutoCommit). A
// function that only hands a map on (a gomock mock) builds none and does
// not count. Methods are named alone, so a call through the code's own
// interface (NewKafkaConfigMapService().GetKafkaConsumerConfigMap(g)) finds
// the builder behind it.
func (w *wholeProgram) configMapBuilders() map[string]bool {
	out := map[string]bool{}
	for _, p := range w.info {
		if p.Types == nil || !w.app[p.Types] || p.TypesInfo == nil {
			continue
		}
		info := p.TypesInfo
		off := commitTurnedOff(info, p.Syntax)
		for _, f := range p.Syntax {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil || !returnsConfigMap(info, fd) || !buildsConfigMap(info, fd.Body) {
					continue
				}
				name := fd.Name.Name
				if prev, seen := out[name]; seen {
					out[name] = prev && !off
				} else {
					out[name] = !off
				}
			}
		}
	}
	return out
}

// returnsConfigMap reports whether fd's only result is a ConfigMap or a
// pointer to one.
func returnsConfigMap(info *types.Info, fd *ast.FuncDecl) bool {
	fn, ok := info.Defs[fd.Name].(*types.Func)
	if !ok {
		return false
	}
	res := fn.Type().(*types.Signature).Results()
	if res.Len() < 1 {
		return false
	}
	t := res.At(0).Type()
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	return isConfluentType(t, "ConfigMap")
}

// buildsConfigMap reports whether body makes or fills a ConfigMap: a
// literal, a SetKey or Set call, or a call of a function of the module
// returning one.
func buildsConfigMap(info *types.Info, body *ast.BlockStmt) bool {
	builds := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if t := info.TypeOf(n); t != nil && isConfluentType(t, "ConfigMap") {
				builds = true
			}
		case *ast.CallExpr:
			fn := callee(info, n)
			if fn == nil {
				return true
			}
			if isConfluent(funcPath(fn)) && recvName(fn) == "ConfigMap" && (fn.Name() == "SetKey" || fn.Name() == "Set") {
				builds = true
			}
		}
		return !builds
	})
	return builds
}

// builtConfigMap reports, in the whole-program mode, whether the ConfigMap
// a NewConsumer call gets comes from a call of a function of the module
// that builds one with the background commit left on (see
// configMapBuilders): `m := svc.ConsumerConfig(group)` then
// `kafka.NewConsumer(&m)`, or the call in the argument itself.
func builtConfigMap(pass *analysis.Pass, c *Consumers, call *ast.CallExpr) bool {
	if c.program == nil || len(c.program.configMaps) == 0 || len(call.Args) != 1 {
		return false
	}
	arg := ast.Unparen(call.Args[0])
	if u, ok := arg.(*ast.UnaryExpr); ok {
		arg = ast.Unparen(u.X)
	}
	maker := func(e ast.Expr) bool {
		mc, ok := ast.Unparen(e).(*ast.CallExpr)
		if !ok {
			return false
		}
		fn := callee(pass.TypesInfo, mc)
		return fn != nil && c.program.configMaps[fn.Name()]
	}
	if maker(arg) {
		return true
	}
	id, ok := arg.(*ast.Ident)
	if !ok {
		return false
	}
	obj := pass.TypesInfo.Uses[id]
	found := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || found || len(as.Lhs) != len(as.Rhs) {
				return !found
			}
			for i, l := range as.Lhs {
				if lid, ok := l.(*ast.Ident); ok && pass.TypesInfo.ObjectOf(lid) == obj && maker(as.Rhs[i]) {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

func isConfluentType(t types.Type, name string) bool {
	return isNamed(t, pathConfluent, name) || isNamed(t, pathConfluent1, name)
}

// commitOffKey is a ConfigMap key that, set to false, stops the background
// commit of polled offsets.
func commitOffKey(k string) bool { return k == "enable.auto.commit" || k == "enable.auto.offset.store" }

func constString(info *types.Info, e ast.Expr) string {
	if tv, ok := info.Types[e]; ok && tv.Value != nil && tv.Value.Kind() == constant.String {
		return constant.StringVal(tv.Value)
	}
	return ""
}

// isFalse reports whether e is the constant false or the string "false".
func isFalse(info *types.Info, e ast.Expr) bool {
	tv, ok := info.Types[e]
	if !ok || tv.Value == nil {
		return false
	}
	switch tv.Value.Kind() {
	case constant.Bool:
		return !constant.BoolVal(tv.Value)
	case constant.String:
		return strings.EqualFold(constant.StringVal(tv.Value), "false")
	}
	return false
}

// autoCommitOff reports whether a ConfigMap literal turns the background
// commit of polled offsets off.
func autoCommitOff(info *types.Info, lit *ast.CompositeLit) bool {
	for _, e := range lit.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok && commitOffKey(constString(info, kv.Key)) && isFalse(info, kv.Value) {
			return true
		}
	}
	return false
}

// configMapLit finds the ConfigMap literal a NewConsumer call gets: written
// in the call, or the literal a variable passed to it was declared with;
// nil when it is built elsewhere.
func configMapLit(pass *analysis.Pass, call *ast.CallExpr, maps []*ast.CompositeLit) *ast.CompositeLit {
	if len(call.Args) != 1 {
		return nil
	}
	arg := ast.Unparen(call.Args[0])
	if u, ok := arg.(*ast.UnaryExpr); ok {
		arg = ast.Unparen(u.X)
	}
	if lit, ok := arg.(*ast.CompositeLit); ok {
		return lit
	}
	var obj types.Object
	switch a := arg.(type) {
	case *ast.Ident:
		obj = pass.TypesInfo.Uses[a]
	case *ast.SelectorExpr:
		// A struct field (&c.config): the literal a composite literal of
		// the struct sets it to, or an assignment to the field.
		obj = pass.TypesInfo.Uses[a.Sel]
		if _, ok := obj.(*types.Var); !ok {
			return nil
		}
		if lit := fieldLit(pass, obj, maps); lit != nil {
			return lit
		}
	default:
		return nil
	}
	for _, f := range pass.Files {
		var found *ast.CompositeLit
		ast.Inspect(f, func(n ast.Node) bool {
			as, ok := n.(*ast.AssignStmt)
			if !ok || found != nil || len(as.Lhs) != len(as.Rhs) {
				return found == nil
			}
			for i, l := range as.Lhs {
				if lid := lastIdent(l); lid != nil && pass.TypesInfo.ObjectOf(lid) == obj {
					rhs := ast.Unparen(as.Rhs[i])
					if u, ok := rhs.(*ast.UnaryExpr); ok {
						rhs = ast.Unparen(u.X)
					}
					for _, m := range maps {
						if m == rhs {
							found = m
						}
					}
				}
			}
			return true
		})
		if found != nil {
			return found
		}
	}
	return nil
}

// lastIdent is e's identifier, or its selector's (c.config: config).
func lastIdent(e ast.Expr) *ast.Ident {
	switch e := ast.Unparen(e).(type) {
	case *ast.Ident:
		return e
	case *ast.SelectorExpr:
		return e.Sel
	}
	return nil
}

// fieldLit finds the ConfigMap literal a struct literal gives the field
// (Consumer{config: kafka.ConfigMap{...}}), nil when none does.
func fieldLit(pass *analysis.Pass, field types.Object, maps []*ast.CompositeLit) *ast.CompositeLit {
	for _, f := range pass.Files {
		var found *ast.CompositeLit
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok || found != nil {
				return found == nil
			}
			k, ok := kv.Key.(*ast.Ident)
			if !ok || pass.TypesInfo.ObjectOf(k) != field {
				return true
			}
			v := ast.Unparen(kv.Value)
			if u, ok := v.(*ast.UnaryExpr); ok {
				v = ast.Unparen(u.X)
			}
			for _, m := range maps {
				if m == v {
					found = m
				}
			}
			return true
		})
		if found != nil {
			return found
		}
	}
	return nil
}

// confluentWork finds the first work after a Poll or ReadMessage in the
// package's confluent-kafka-go poll loops: in the statement that polls (a
// type switch on the event) or the statements after it in its block.
func confluentWork(pass *analysis.Pass, c *Consumers) (string, ast.Node) {
	for node, root := range c.reach {
		if root.Kind != KindConfluent {
			continue
		}
		var work string
		var at ast.Node
		ast.Inspect(funcBody(node), func(m ast.Node) bool {
			if _, ok := m.(*ast.FuncLit); ok {
				return false
			}
			block, ok := stmtBlock(m)
			if !ok || work != "" {
				return work == ""
			}
			for i, st := range block.List {
				if polls(pass, st) {
					if work, at = workOrHandler(pass, c, block.List[i:]); work != "" {
						return false
					}
				}
			}
			return true
		})
		if work != "" {
			return work, at
		}
	}
	return "", nil
}

// workOrHandler is firstWork, or else the first call through a function
// value or an interface that is handed a message: the application's
// handler, given to the loop as a parameter or a field (what it does is the
// whole-program mode's to follow; here it is the loop's work).
func workOrHandler(pass *analysis.Pass, c *Consumers, stmts []ast.Stmt) (string, ast.Node) {
	if work, at := firstWork(pass, c, stmts); work != "" {
		return work, at
	}
	var at *ast.CallExpr
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok || at != nil {
				return false
			}
			call, ok := n.(*ast.CallExpr)
			if !ok || !dynamicCall(pass.TypesInfo, call) {
				return true
			}
			for _, a := range call.Args {
				if carriesMessage(pass.TypesInfo, a) {
					at = call
				}
			}
			return at == nil
		})
		if at != nil {
			return "the handler " + types.ExprString(at.Fun), at
		}
	}
	// A hand-off: the message (or what was copied out of it) sent to
	// another goroutine, whose work the background commit does not wait
	// for either.
	for _, st := range stmts {
		var send *ast.SendStmt
		ast.Inspect(st, func(n ast.Node) bool {
			if _, ok := n.(*ast.FuncLit); ok || send != nil {
				return false
			}
			if s, ok := n.(*ast.SendStmt); ok && carriesData(pass.TypesInfo.TypeOf(s.Value)) {
				send = s
			}
			return send == nil
		})
		if send != nil {
			return "a hand-off to another goroutine (a channel send)", send
		}
	}
	return "", nil
}

// carriesData reports whether a channel element of type t can carry a
// message's content: not a signal (struct{}, bool, error, os.Signal),
// the channel element types the whole-program walk does not follow.
func carriesData(t types.Type) bool {
	if t == nil {
		return false
	}
	switch u := t.Underlying().(type) {
	case *types.Struct:
		return u.NumFields() > 0
	case *types.Basic:
		return u.Kind() == types.String || u.Kind() == types.UntypedString
	}
	if isNamed(t, "os", "Signal") || types.Identical(t, types.Universe.Lookup("error").Type()) {
		return false
	}
	return true
}

// polls reports whether a statement calls (*kafka.Consumer).Poll or
// ReadMessage outside nested function literals.
func polls(pass *analysis.Pass, st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			fn := callee(pass.TypesInfo, n)
			if fn != nil && (fn.Name() == "Poll" || fn.Name() == "ReadMessage") && confluentConsumerMethod(fn) {
				found = true
			}
		}
		return !found
	})
	return found
}
