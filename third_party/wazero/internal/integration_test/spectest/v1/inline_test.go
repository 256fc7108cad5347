package v1

import (
	"context"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/internal/integration_test/spectest"
	"github.com/tetratelabs/wazero/internal/platform"
)

// The spec suite, compiled with the inline termination check (the station's
// patch): the checks at loop headers and function entries change nothing a
// module computes.
func TestCompilerInlineTerminationCheck(t *testing.T) {
	if !platform.CompilerSupported() {
		t.Skip()
	}
	ctx := experimental.WithInlineTerminationCheck(context.Background())
	spectest.Run(t, Testcases, ctx, wazero.NewRuntimeConfigCompiler().WithCoreFeatures(api.CoreFeaturesV1).WithCloseOnContextDone(true))
}
