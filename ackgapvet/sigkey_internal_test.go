package ackgapvet

import (
	"go/token"
	"go/types"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSigKeyVariadicString: a variadic signature whose last parameter is a
// string (the builtin append's append([]byte, string...), met in SSA of a
// real module: field trial wave 5, ozontech/file.d) has a shape; sigKey
// panicked on it, and the whole run with it.
func TestSigKeyVariadicString(t *testing.T) {
	byteSlice := types.NewSlice(types.Universe.Lookup("byte").Type())
	params := types.NewTuple(
		types.NewVar(token.NoPos, nil, "b", byteSlice),
		types.NewVar(token.NoPos, nil, "s", types.Typ[types.String]),
	)
	results := types.NewTuple(types.NewVar(token.NoPos, nil, "", byteSlice))
	sig := types.NewSignatureType(nil, nil, nil, params, results, true)
	require.Equal(t, "func([]byte, ...string) ([]byte)", sigKey(sig))

	named := types.NewSignatureType(nil, nil, nil, types.NewTuple(
		types.NewVar(token.NoPos, nil, "xs", types.NewSlice(types.Typ[types.Int])),
	), nil, true)
	require.Equal(t, "func(...int) ()", sigKey(named))
}
