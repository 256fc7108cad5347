package wasm

import "unsafe"

// InterruptOffset is the offset of ModuleInstance.Interrupt, which code
// compiled with the inline termination check loads at every loop header.
const InterruptOffset = unsafe.Offsetof(ModuleInstance{}.Interrupt)

// InterruptExecution raises m's interrupt flag: code of m compiled with the
// inline termination check returns to Go at its next loop header, where the
// engine clears the flag, yields the goroutine and, unless m is closed,
// resumes it. See experimental.Interrupt.
func (m *ModuleInstance) InterruptExecution() {
	m.Interrupt.Store(1)
}

// TerminateExecution closes m with exitCode as a done context does (its
// resources are closed when the running call unwinds, or by Close); like
// every close, that raises its interrupt flag. It reports whether this call
// closed m. See experimental.Terminate.
func (m *ModuleInstance) TerminateExecution(exitCode uint32) bool {
	if !m.setExitCode(exitCode, exitCodeFlagResourceNotClosed) {
		return false
	}
	_ = m.s.deleteModule(m)
	return true
}
