package ackgapvet

import (
	"go/ast"
	"go/constant"
	"slices"

	"golang.org/x/tools/go/analysis"
)

// redisPendingCmd names the go-redis commands that read or take over a
// consumer group's pending entries (the entries delivered and not yet
// acked): a package that calls one redelivers what a crash left behind.
var redisPendingCmd = map[string]bool{"XPending": true, "XPendingExt": true, "XClaim": true, "XClaimJustID": true, "XAutoClaim": true, "XAutoClaimJustID": true}

// redisPendingNeverRead reports a Redis stream consumer loop that reads
// its group only with the ID ">" (new entries) in a package that never
// reads pending entries (an XREADGROUP with another ID, such as "0", or
// XPENDING, XCLAIM, XAUTOCLAIM): an entry delivered to the consumer and not
// acked (a crash or a restart before XACK, a failure that skips it) stays
// in the group's pending entries list for good, and XREADGROUP with ">"
// never returns it again (Redis docs, XREADGROUP: "the ID > ... only
// messages that were never delivered to any other consumer"; the PEL
// keeps the rest until XACK or XCLAIM). Field trial, wave 59: devpool's
// four stream consumers.
func redisPendingNeverRead(pass *analysis.Pass, c *Consumers, r *reporter) {
	var onlyNew []*ast.CallExpr
	readsPending := false
	for _, f := range pass.Files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || readsPending {
				return !readsPending
			}
			switch cmd := redisCmd(pass.TypesInfo, call); {
			case redisPendingCmd[cmd]:
				readsPending = true
			case cmd == "XReadGroup":
				if newOnly(pass, call) {
					onlyNew = append(onlyNew, call)
				} else {
					readsPending = true // "0", or IDs the code computes
				}
			}
			return true
		})
	}
	if readsPending {
		return
	}
	walk(pass, c, callNode, func(n ast.Node, s *site) {
		call := n.(*ast.CallExpr)
		if s.Root == nil || s.Root.Kind != KindRedisQueue || !slices.Contains(onlyNew, call) {
			return
		}
		r.report(call, SeverityOf(s.names()...), "XREADGROUP reads only new entries (\">\") "+s.where()+", and nothing in the package reads the group's pending entries: an entry delivered and not acked (a crash or restart before XACK, a failure that skips it) stays pending and is never delivered again, so it is lost; on start, read this consumer's pending entries first (XREADGROUP with ID \"0\"), or reclaim idle ones with XAUTOCLAIM")
	})
}

// newOnly reports whether an XReadGroup call's arguments are a literal
// XReadGroupArgs whose Streams list ends in IDs that are all ">".
func newOnly(pass *analysis.Pass, call *ast.CallExpr) bool {
	if len(call.Args) < 2 {
		return false
	}
	arg := ast.Unparen(call.Args[len(call.Args)-1])
	if u, ok := arg.(*ast.UnaryExpr); ok {
		arg = ast.Unparen(u.X)
	}
	lit, ok := arg.(*ast.CompositeLit)
	if !ok {
		return false
	}
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		if id, ok := kv.Key.(*ast.Ident); !ok || id.Name != "Streams" {
			continue
		}
		streams, ok := ast.Unparen(kv.Value).(*ast.CompositeLit)
		if !ok || len(streams.Elts) < 2 || len(streams.Elts)%2 != 0 {
			return false
		}
		for _, e := range streams.Elts[len(streams.Elts)/2:] {
			tv := pass.TypesInfo.Types[e]
			if tv.Value == nil || tv.Value.Kind() != constant.String || constant.StringVal(tv.Value) != ">" {
				return false
			}
		}
		return true
	}
	return false
}
