package wasm

import "unsafe"

// ClosedOffset is the offset of ModuleInstance.Closed, whose low 32 bits
// (non-zero once the module is closed: they hold the close's flag) code
// compiled with the inline termination check loads at every loop header
// and function entry.
const ClosedOffset = unsafe.Offsetof(ModuleInstance{}.Closed)

// TerminateExecution closes m with exitCode as a done context does (its
// resources are closed when the running call unwinds). It reports whether
// this call closed m. See experimental.Terminate.
func (m *ModuleInstance) TerminateExecution(exitCode uint32) bool {
	if !m.setExitCode(exitCode, exitCodeFlagResourceNotClosed) {
		return false
	}
	_ = m.s.deleteModule(m)
	return true
}
