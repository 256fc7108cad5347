// Package workflow parses, checks and runs workflows: YAML files whose steps
// call module commands (through the station's one dispatch entry point) or
// station built-ins (llm), with inputs built from the workflow's inputs and
// earlier steps' outputs by ${{ expression }} templates (expr-lang), steps
// that depend on others or run in parallel, per-step timeouts, retries with
// backoff and continue_on_error.
//
// A run is persisted as it progresses, each transition in one transaction
// (the Store interface, implemented by *store.Store), so a station killed
// mid-run leaves a consistent record and the run resumes from its first
// unfinished step. The language reference is docs/workflows.md; the
// decisions behind it are in RATIONALE.md.
package workflow
