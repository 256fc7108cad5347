// Package abi is the contract between the station and a guest module: the
// names of the imports the station links, the export it calls, the status
// codes host calls return and the JSON documents they exchange. It is shared
// by the host (internal/host) and the Go SDK (sdk), and specified for every
// other language in docs/abi.md.
//
// Every import and export uses only i32 and i64, so any toolchain that targets
// WebAssembly can implement a module.
//
// # Version history
//
//   - 1 (2026-11): buffers, output_set, log, http_request, process_run,
//     llm_complete. Imports are only ever added within a version: a module
//     that imports one a station does not offer is refused at install.
//   - 1, 2026-12 (SDK v1.1.0): secret placeholders (secret.go), text the
//     network gate replaces; no import.
package abi

// Version is the ABI version this package describes. A guest declares the
// version it was built for by exporting a function named ExportVersionPrefix
// followed by the number (station_abi_1); the station refuses a module that
// declares no version it speaks.
const Version = 1

// ImportModule is the module name of every station import.
const ImportModule = "station"

// Guest exports.
const (
	// ExportVersionPrefix + "1" is an exported function with no parameters and
	// no results whose presence declares ABI version 1.
	ExportVersionPrefix = "station_abi_"
	// ExportCall is `station_call(command i32, input i32) -> i32`. Both
	// arguments are buffer handles (input is 0 when the input is empty). The
	// result is one of the Call* codes.
	ExportCall = "station_call"
	// ExportInitialize is the reactor initializer (WASI reactor model); the
	// station runs it once per instance, before any call.
	ExportInitialize = "_initialize"
	// ExportMemory is the guest's linear memory.
	ExportMemory = "memory"
)

// Results of station_call.
const (
	CallOK             = 0 // output_set holds the JSON result (or nothing: null)
	CallFailed         = 1 // output_set holds an error message (UTF-8 text)
	CallUnknownCommand = 2
)

// Station imports (module ImportModule).
const (
	// ImportBufLen is `buf_len(h i32) -> i32`: the length of buffer h, or -1
	// if h is not a live handle.
	ImportBufLen = "buf_len"
	// ImportBufRead is `buf_read(h i32, ptr i32, len i32) -> i32`: copies all
	// of buffer h to guest memory [ptr, ptr+len) and frees h. len must be at
	// least buf_len(h). Returns the number of bytes copied, or a negative
	// Status.
	ImportBufRead = "buf_read"
	// ImportBufFree is `buf_free(h i32)`: frees buffer h; unknown handles are
	// ignored.
	ImportBufFree = "buf_free"
	// ImportOutputSet is `output_set(ptr i32, len i32) -> i32`: sets the
	// result of the current call (replacing an earlier one). Returns 0 or a
	// negative Status.
	ImportOutputSet = "output_set"
	// ImportLog is `log(level i32, ptr i32, len i32) -> i32`: writes one line
	// to the station's module log. Returns 0 or a negative Status.
	ImportLog = "log"
	// ImportHTTPRequest is `http_request(ptr i32, len i32) -> i64`: performs
	// the HTTPRequest JSON document at [ptr, ptr+len) through the module's
	// network gate. The result is a Result (status and handle packed in an
	// i64): on StatusOK the handle holds an HTTPResponse document, otherwise
	// an Error document.
	ImportHTTPRequest = "http_request"
	// ImportProcessRun is `process_run(ptr i32, len i32) -> i64`: runs the
	// ProcessRequest document at [ptr, ptr+len) through the module's
	// subprocess gate and waits for it. The result is packed like
	// http_request's: on StatusOK the handle holds a ProcessResponse document.
	// It is linked only into modules whose manifest grants subprocess.
	ImportProcessRun = "process_run"
	// ImportLLMComplete is `llm_complete(ptr i32, len i32) -> i64`: asks the
	// station's LLM for the completion the LLMRequest document at
	// [ptr, ptr+len) describes. The station makes the request with its own
	// provider and key, within the module's token limits, and records the
	// usage. The result is packed like http_request's: on StatusOK the
	// handle holds an LLMResponse document. It is linked only into modules
	// whose manifest grants llm.
	ImportLLMComplete = "llm_complete"
)

// Status is the outcome of a host call.
type Status int32

// Host call statuses. They are stable: a new version may add codes, never
// renumber them.
const (
	StatusOK          Status = 0
	StatusDenied      Status = 1 // a gate refused the operation (a sandbox violation)
	StatusFault       Status = 2 // a pointer or length is outside guest memory
	StatusInvalid     Status = 3 // the argument is malformed
	StatusTooLarge    Status = 4 // an argument or a result exceeds its limit
	StatusFailed      Status = 5 // the operation was allowed but failed (connection refused, ...)
	StatusTimeout     Status = 6 // the call's deadline passed
	StatusUnavailable Status = 7 // no call is active (the start function is running)
)

var statusNames = [...]string{"ok", "denied", "fault", "invalid", "too_large", "failed", "timeout", "unavailable"}

// String returns the status's wire name (as used in Error.Code).
func (s Status) String() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown"
}

// Pack builds the i64 result of a host call that returns a buffer: the status
// in the high 32 bits and the buffer handle (0 for none) in the low 32 bits.
func Pack(s Status, handle uint32) uint64 { return uint64(uint32(s))<<32 | uint64(handle) }

// Unpack splits an i64 host call result into its status and buffer handle.
func Unpack(r uint64) (Status, uint32) { return Status(int32(r >> 32)), uint32(r) }

// Error is the JSON document a failing host call returns in its buffer.
type Error struct {
	Code       string `json:"code"`                 // Status.String()
	Capability string `json:"capability,omitempty"` // for denials: "network", ...
	Target     string `json:"target,omitempty"`     // for denials: what was refused (sanitized)
	Reason     string `json:"reason,omitempty"`     // for denials: why
	Message    string `json:"message"`              // one line for humans
}

// HTTPRequest is the JSON document http_request takes. Body is base64 in
// JSON (encoding/json's []byte form).
type HTTPRequest struct {
	Method  string              `json:"method"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    []byte              `json:"body,omitempty"`
}

// HTTPResponse is the JSON document a successful http_request returns. URL is
// the final URL after the redirects the station followed.
type HTTPResponse struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    []byte              `json:"body,omitempty"`
	URL     string              `json:"url"`
}

// ProcessRequest is the JSON document process_run takes. Argv[0] names a
// program the manifest allows (by the name it was granted under); the station
// runs the absolute path it resolved at install, without a shell.
type ProcessRequest struct {
	Argv  []string          `json:"argv"`
	Env   map[string]string `json:"env,omitempty"`   // only variables the manifest declares
	Stdin []byte            `json:"stdin,omitempty"` // base64 in JSON
	Dir   string            `json:"dir,omitempty"`   // working directory; must be inside a whole-tree write grant (X/**)
}

// ProcessResponse is the JSON document a successful process_run returns.
// A program that ran and exited non-zero is a success of the host call.
//
// Stdout and Stderr hold at most Limit bytes each. When the program wrote
// more, the station kept the first Limit bytes, read and discarded the rest
// (StdoutDropped, StderrDropped count them) and set Truncated: a response
// without Truncated holds everything the program wrote.
type ProcessResponse struct {
	ExitCode      int    `json:"exit_code"` // -1 when killed by a signal (a deadline fails the host call instead)
	Stdout        []byte `json:"stdout,omitempty"`
	Stderr        []byte `json:"stderr,omitempty"`
	Truncated     bool   `json:"truncated,omitempty"`      // stdout or stderr exceeded Limit
	Limit         int64  `json:"limit,omitempty"`          // the cap on each stream, in bytes
	StdoutDropped int64  `json:"stdout_dropped,omitempty"` // bytes of stdout past Limit, discarded
	StderrDropped int64  `json:"stderr_dropped,omitempty"` // bytes of stderr past Limit, discarded
}

// LLMMessage is one chat message of an LLMRequest.
type LLMMessage struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// LLMRequest is the JSON document llm_complete takes. The model is the
// station's: the operator chooses it and pays for it.
type LLMRequest struct {
	Messages []LLMMessage `json:"messages"`
	// MaxTokens bounds the completion; 0 leaves it to the module's
	// max_tokens_per_call, if any, else to the provider.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature, 0 to 2, if set.
	Temperature *float64 `json:"temperature,omitempty"`
	// JSON asks the provider for a JSON object (OpenAI's JSON mode: the
	// messages must mention JSON).
	JSON bool `json:"json,omitempty"`
}

// LLMUsage is what a completion cost, as the provider reported it.
type LLMUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// LLMResponse is the JSON document a successful llm_complete returns.
type LLMResponse struct {
	Model        string   `json:"model"`
	Content      string   `json:"content"`
	FinishReason string   `json:"finish_reason,omitempty"` // "stop", "length", ...
	Usage        LLMUsage `json:"usage"`
}

// Log levels for the log import.
const (
	LogDebug = 0
	LogInfo  = 1
	LogWarn  = 2
	LogError = 3
)
