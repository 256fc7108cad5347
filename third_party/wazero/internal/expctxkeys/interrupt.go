package expctxkeys

// InlineTerminationCheckKey is a context.Context Value key. Its value, a
// bool, selects the inline termination check; see
// experimental.WithInlineTerminationCheck.
type InlineTerminationCheckKey struct{}
