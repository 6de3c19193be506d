package ackgapvet

import (
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/analysis"
)

// handedOff finds, in the statements before an ack, the last hand-off of
// the message to another goroutine that nothing waits for before the ack:
// a go statement or a channel send whose values include a message (a
// Sarama, kafka-go, franz-go, confluent-kafka-go or Watermill message, an
// SQS message or a Lambda record). A Wait call (a WaitGroup, errgroup) or
// a channel receive after it means the ack waits: not reported.
func handedOff(pass *analysis.Pass, before []ast.Stmt) (string, ast.Node) {
	for i := len(before) - 1; i >= 0; i-- {
		switch st := before[i].(type) {
		case *ast.GoStmt:
			if carriesMessage(pass.TypesInfo, st.Call) {
				return "go " + types.ExprString(st.Call.Fun), st
			}
		case *ast.SendStmt:
			if carriesMessage(pass.TypesInfo, st.Value) {
				return "a send on " + types.ExprString(st.Chan), st
			}
		}
		if waits(before[i]) {
			return "", nil
		}
	}
	return "", nil
}

// waits reports whether st waits for other goroutines: a call of a method
// named Wait, or a channel receive.
func waits(st ast.Stmt) bool {
	found := false
	ast.Inspect(st, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.CallExpr:
			if sel, ok := ast.Unparen(n.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "Wait" {
				found = true
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				found = true
			}
		}
		return !found
	})
	return found
}

// carriesMessage reports whether e mentions a value of a message type.
func carriesMessage(info *types.Info, e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if v, ok := info.Uses[id].(*types.Var); ok && isMessageType(v.Type()) {
				found = true
			}
		}
		return !found
	})
	return found
}

// isMessageType matches the message types of the supported clients.
func isMessageType(t types.Type) bool {
	return isNamed(t, "github.com/IBM/sarama", "ConsumerMessage") || isNamed(t, "github.com/Shopify/sarama", "ConsumerMessage") ||
		isNamed(t, pathKafkaGo, "Message") || isNamed(t, pathKgo, "Record") ||
		isNamed(t, pathConfluent, "Message") || isNamed(t, pathConfluent1, "Message") ||
		isNamed(t, pathWatermill+"/message", "Message") ||
		isNamed(t, pathSQS+"/types", "Message") || isNamed(t, pathSQSv1, "Message") ||
		isNamed(t, pathLambdaEvt, "SQSMessage")
}
