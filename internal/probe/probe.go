// Package probe describes the probe: the general-purpose guest module the
// sandbox tests run under any manifest (SECURITY.md, "The probe module").
// The probe's one command, run, takes a list of actions and returns the
// result of each, so an attack on the station is written as data:
//
//	in := probe.Run(
//		probe.HTTP("GET", "https://evil.example/"),
//		probe.Spawn(probe.HTTP("GET", "https://evil.example/"), false),
//		probe.Raw("http_request", 0xffffffff, 10),
//	)
//	// call command probe.Command of the probe built from probe.GuestDir with in
//	results, err := probe.Decode(out)
//
// The guest itself is the main package in GuestDir; it shares this
// package's types. In native builds, Wasm builds it for a test.
package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

const (
	// GuestDir is the probe's package directory, relative to the repository
	// root (the argument of wasmbuild.ForTest).
	GuestDir = "internal/probe/guest"
	// Command is the probe's only command.
	Command = "run"
	// ExtraImportTag is the build tag of the probe variant that also imports
	// station.exec, an import the station does not offer: instantiating it
	// must fail cleanly.
	ExtraImportTag = "probe_extra_import"
	// NoNetworkTag is the build tag of the probe variant without
	// station.http_request and net/http: a third of the size, so tests that
	// need no network compile it faster (its http actions fail without
	// calling the station).
	NoNetworkTag = "probe_no_network"
	// ExecTag is the build tag of the probe variant that imports
	// station.process_run (through sdk/sproc) for its exec action; it loads
	// only into modules whose manifest grants subprocess.
	ExecTag = "probe_exec"
	// LLMTag is the build tag of the probe variant that imports
	// station.llm_complete (through sdk/sllm) for its llm action; it loads
	// only into modules whose manifest grants llm.
	LLMTag = "probe_llm"
)

// Sentinel values for Action.Args of a raw action with Data: the probe
// replaces them by the address and the length of its copy of Data. Real
// arguments are truncated to 32 bits, so these values cannot collide.
const (
	DataPtr int64 = -(1 << 32)
	DataLen int64 = -(1 << 32) - 1
)

// Ops, the values of Action.Op.
const (
	OpHTTP       = "http"        // Method, URL, Headers, Body
	OpSpawn      = "spawn"       // Action, Wait
	OpCollect    = "collect"     // WaitMS
	OpSeq        = "seq"         // Actions, run in order
	OpRaw        = "raw"         // Import, Args, Data, Read
	OpAlloc      = "alloc"       // Bytes, Keep
	OpLoop       = "loop"        // spins until the station stops the call
	OpPanic      = "panic"       // Message
	OpTrap       = "trap"        // an out-of-bounds memory access: a real wasm trap
	OpExit       = "exit"        // Code: os.Exit, that is WASI proc_exit
	OpOutput     = "output"      // Bytes
	OpSleep      = "sleep"       // MS
	OpLog        = "log"         // Message, Level
	OpPrint      = "print"       // Stream ("stdout" or "stderr"), Message
	OpEnv        = "env"         // returns os.Args and os.Environ
	OpRead       = "read"        // Path
	OpWrite      = "write"       // Path, Data (create or truncate)
	OpAppend     = "append"      // Path, Data
	OpTruncate   = "truncate"    // Path, Bytes (the new size)
	OpRemove     = "remove"      // Path
	OpRename     = "rename"      // Path, To
	OpMkdir      = "mkdir"       // Path
	OpRmdir      = "rmdir"       // Path
	OpSymlink    = "symlink"     // To (the link's target), Path (the link)
	OpLink       = "link"        // Path (existing), To (new name)
	OpChtimes    = "chtimes"     // Path
	OpReadlink   = "readlink"    // Path; Result.Data is the link's target
	OpList       = "list"        // Path; Result.Data is the names in the directory, sorted, comma-separated
	OpHold       = "hold"        // Path, Bytes: opens Path Bytes times and never closes it; Result.Data is how many opened
	OpCreateMany = "create_many" // Path (a directory), Bytes: creates the empty files f0, f1, ...; Result.Data is how many
	OpOpenat     = "openat"      // Path (a directory), To or RawPath (passed to path_open as it is), Create
	OpExec       = "exec"        // Argv, ExecEnv, Data (stdin), Path (working directory), Partial; needs ExecTag
	OpLLM        = "llm"         // LLM; needs LLMTag
)

// Action is one step of a probe run. Op selects it; the other fields are
// its arguments (see the Op* constants).
type Action struct {
	Op      string              `json:"op"`
	Method  string              `json:"method,omitempty"`
	URL     string              `json:"url,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    string              `json:"body,omitempty"`
	Action  *Action             `json:"action,omitempty"`
	Wait    bool                `json:"wait,omitempty"`
	WaitMS  int                 `json:"wait_ms,omitempty"`
	Actions []Action            `json:"actions,omitempty"`
	Import  string              `json:"import,omitempty"`
	Args    []int64             `json:"args,omitempty"`
	Data    string              `json:"data,omitempty"`
	Read    bool                `json:"read,omitempty"`
	Bytes   int                 `json:"bytes,omitempty"`
	Keep    bool                `json:"keep,omitempty"`
	Message string              `json:"message,omitempty"`
	Level   string              `json:"level,omitempty"`
	Stream  string              `json:"stream,omitempty"`
	MS      int                 `json:"ms,omitempty"`
	Path    string              `json:"path,omitempty"`
	To      string              `json:"to,omitempty"`
	Code    int                 `json:"code,omitempty"`
	RawPath []byte              `json:"raw_path,omitempty"`
	Create  bool                `json:"create,omitempty"`
	Argv    []string            `json:"argv,omitempty"`
	ExecEnv map[string]string   `json:"exec_env,omitempty"`
	Partial bool                `json:"partial,omitempty"` // exec: sproc.Cmd.Partial
	LLM     *LLMRequest         `json:"llm,omitempty"`
}

// LLMRequest is the request of an llm action (sllm.Request's fields).
type LLMRequest struct {
	Messages  []LLMMessage `json:"messages"`
	MaxTokens int          `json:"max_tokens,omitempty"`
	JSON      bool         `json:"json,omitempty"`
}

// LLMMessage is one message of an LLMRequest.
type LLMMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LLMResult is what an llm action got back (sllm.Response's fields).
type LLMResult struct {
	Model            string `json:"model"`
	Content          string `json:"content"`
	FinishReason     string `json:"finish_reason,omitempty"`
	PromptTokens     int    `json:"prompt_tokens"`
	CompletionTokens int    `json:"completion_tokens"`
	TotalTokens      int    `json:"total_tokens"`
}

// Result is the outcome of one action.
type Result struct {
	Op    string `json:"op"`
	OK    bool   `json:"ok"`
	Error *Error `json:"error,omitempty"`

	// http
	Status  int                 `json:"status,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Body    string              `json:"body,omitempty"` // at most MaxBody bytes
	BodyLen int                 `json:"body_len,omitempty"`
	URL     string              `json:"url,omitempty"` // the final URL

	// spawn, collect, seq
	ID      int      `json:"id,omitempty"`      // of a spawned action
	Result  *Result  `json:"result,omitempty"`  // spawn with Wait
	Results []Result `json:"results,omitempty"` // collect, seq

	// raw
	Value     *int64  `json:"value,omitempty"`      // the import's raw return value
	ABIStatus *int32  `json:"abi_status,omitempty"` // http_request: the status half
	Handle    *uint32 `json:"handle,omitempty"`     // http_request: the handle half
	Buffer    *string `json:"buffer,omitempty"`     // http_request with Read: the buffer

	// output, read, readlink, list
	Data string `json:"data,omitempty"`

	// env
	Args []string `json:"args,omitempty"`
	Env  []string `json:"env,omitempty"`

	// exec; Stdout and Stderr are at most MaxBody bytes of what the
	// module got, StdoutLen its length. Truncated, Limit and StdoutDropped
	// are sproc.Result's: set also when the action fails with
	// sproc.ErrTruncated.
	ExitCode      *int   `json:"exit_code,omitempty"`
	Stdout        string `json:"stdout,omitempty"`
	Stderr        string `json:"stderr,omitempty"`
	StdoutLen     int    `json:"stdout_len,omitempty"`
	Truncated     bool   `json:"truncated,omitempty"`
	Limit         int64  `json:"limit,omitempty"`
	StdoutDropped int64  `json:"stdout_dropped,omitempty"`

	// llm
	LLM *LLMResult `json:"llm,omitempty"`
}

// Error describes a failed action. For a station host call it carries the
// fields of the abi.Error document and the call's status.
type Error struct {
	Status     int32  `json:"status,omitempty"` // abi.Status, 0 when not from the station
	Code       string `json:"code,omitempty"`
	Capability string `json:"capability,omitempty"`
	Target     string `json:"target,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Message    string `json:"message"`
}

// MaxBody is how much of an HTTP response body a result carries.
const MaxBody = 4 << 10

// Input is the input document of the run command.
type Input struct {
	Actions []Action `json:"actions"`
}

// Results is the result document of the run command.
type Results struct {
	Results []Result `json:"results"`
}

// Run returns the input document of the run command for actions.
func Run(actions ...Action) []byte {
	if actions == nil {
		actions = []Action{}
	}
	b, err := json.Marshal(Input{Actions: actions})
	if err != nil {
		panic(fmt.Sprintf("probe: encode input: %v", err)) // cannot happen: plain data
	}
	return b
}

// Decode decodes the output of the run command, strictly.
func Decode(out []byte) ([]Result, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var o Results
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("probe: decode output: %w", err)
	}
	return o.Results, nil
}

// HTTP is a request; WithHeader and WithBody add to it.
func HTTP(method, url string) Action { return Action{Op: OpHTTP, Method: method, URL: url} }

// WithHeader returns a with the header name: value added.
func (a Action) WithHeader(name, value string) Action {
	h := make(map[string][]string, len(a.Headers)+1)
	for k, v := range a.Headers {
		h[k] = v
	}
	h[name] = append(h[name][:len(h[name]):len(h[name])], value)
	a.Headers = h
	return a
}

// WithBody returns a with the request body body.
func (a Action) WithBody(body string) Action { a.Body = body; return a }

// Spawn runs a in a new goroutine. With wait it waits for a and returns its
// result (in Result.Result); otherwise it returns at once, with the ID under
// which a later Collect returns the result.
func Spawn(a Action, wait bool) Action { return Action{Op: OpSpawn, Action: &a, Wait: wait} }

// Collect returns (in Result.Results) and forgets the results of the
// spawned actions that finished so far, waiting up to wait for at least one.
func Collect(wait time.Duration) Action {
	return Action{Op: OpCollect, WaitMS: int(wait / time.Millisecond)}
}

// Seq runs actions in order and returns their results in Result.Results; with
// Spawn it makes a background sequence.
func Seq(actions ...Action) Action { return Action{Op: OpSeq, Actions: actions} }

// Raw calls the station import name directly with args, each truncated to 32
// bits. name is one of the abi.Import* names, or "exec" (exec(ptr, len i32)
// -> i64, an import the station does not offer) in the ExtraImportTag build. Result.Value is the raw return value; for
// http_request Result.ABIStatus and Result.Handle are its two halves.
func Raw(name string, args ...int64) Action { return Action{Op: OpRaw, Import: name, Args: args} }

// RawData is Raw with data copied into guest memory first; DataPtr and
// DataLen in args stand for its address and length.
func RawData(name, data string, args ...int64) Action {
	return Action{Op: OpRaw, Import: name, Args: args, Data: data}
}

// ReadBuffer returns a with Read set: after a raw http_request, the probe
// reads the returned buffer into Result.Buffer.
func (a Action) ReadBuffer() Action { a.Read = true; return a }

// Alloc allocates and touches n bytes; with keep they stay referenced for
// the life of the instance.
func Alloc(n int, keep bool) Action { return Action{Op: OpAlloc, Bytes: n, Keep: keep} }

// Loop spins forever.
func Loop() Action { return Action{Op: OpLoop} }

// Panic panics with msg in the command's goroutine (or, under Spawn, in a
// spawned one, which takes the whole instance down).
func Panic(msg string) Action { return Action{Op: OpPanic, Message: msg} }

// Trap executes an out-of-bounds memory access, a WebAssembly trap that no
// Go code can recover from.
func Trap() Action { return Action{Op: OpTrap} }

// Exit calls os.Exit(code), that is WASI proc_exit.
func Exit(code int) Action { return Action{Op: OpExit, Code: code} }

// Output makes the command's output at least n bytes long (Result.Data).
func Output(n int) Action { return Action{Op: OpOutput, Bytes: n} }

// Sleep sleeps for d.
func Sleep(d time.Duration) Action { return Action{Op: OpSleep, MS: int(d / time.Millisecond)} }

// Log logs msg through the SDK at level info.
func Log(msg string) Action { return Action{Op: OpLog, Message: msg} }

// Print writes msg and a newline to stream, "stdout" or "stderr".
func Print(stream, msg string) Action { return Action{Op: OpPrint, Stream: stream, Message: msg} }

// Env returns the module's os.Args and os.Environ.
func Env() Action { return Action{Op: OpEnv} }

// Read reads the file at path (Result.Data, at most MaxBody bytes).
func Read(path string) Action { return Action{Op: OpRead, Path: path} }

// Write creates or truncates the file at path and writes data.
func Write(path, data string) Action { return Action{Op: OpWrite, Path: path, Data: data} }

// Append appends data to the file at path, creating it.
func Append(path, data string) Action { return Action{Op: OpAppend, Path: path, Data: data} }

// Truncate sets the size of the file at path.
func Truncate(path string, size int) Action { return Action{Op: OpTruncate, Path: path, Bytes: size} }

// Remove removes the file or empty directory at path.
func Remove(path string) Action { return Action{Op: OpRemove, Path: path} }

// Rename renames from to to.
func Rename(from, to string) Action { return Action{Op: OpRename, Path: from, To: to} }

// Mkdir creates the directory path.
func Mkdir(path string) Action { return Action{Op: OpMkdir, Path: path} }

// Rmdir removes the empty directory path.
func Rmdir(path string) Action { return Action{Op: OpRmdir, Path: path} }

// Symlink creates the symbolic link path pointing at target.
func Symlink(target, path string) Action { return Action{Op: OpSymlink, Path: path, To: target} }

// Link creates the hard link to for the existing file from.
func Link(from, to string) Action { return Action{Op: OpLink, Path: from, To: to} }

// Exec starts a program through process_run (argv[0] is the granted name);
// the probe must be built with ExecTag.
func Exec(argv ...string) Action { return Action{Op: OpExec, Argv: argv} }

// WithEnv sets the variables an exec action passes.
func (a Action) WithEnv(env map[string]string) Action { a.ExecEnv = env; return a }

// WithPartial makes an exec action accept output the station cut
// (sproc.Cmd.Partial).
func (a Action) WithPartial() Action { a.Partial = true; return a }

// InDir sets the working directory of an exec action.
func (a Action) InDir(dir string) Action { a.Path = dir; return a }

// Ask asks the station's LLM for a completion of one user message through
// llm_complete (sdk/sllm); the probe must be built with LLMTag.
func Ask(prompt string) Action {
	return Action{Op: OpLLM, LLM: &LLMRequest{Messages: []LLMMessage{{Role: "user", Content: prompt}}}}
}

// LLM asks for a completion of messages, alternately "role", "content".
func LLM(roleContent ...string) Action {
	r := &LLMRequest{}
	for i := 0; i+1 < len(roleContent); i += 2 {
		r.Messages = append(r.Messages, LLMMessage{Role: roleContent[i], Content: roleContent[i+1]})
	}
	return Action{Op: OpLLM, LLM: r}
}

// WithMaxTokens sets the max_tokens of an llm action.
func (a Action) WithMaxTokens(n int) Action {
	r := *a.LLM
	r.MaxTokens = n
	a.LLM = &r
	return a
}

// Chtimes sets the access and modification times of path to the Unix epoch.
func Chtimes(path string) Action { return Action{Op: OpChtimes, Path: path} }

// Readlink reads the symbolic link path (Result.Data is its target).
func Readlink(path string) Action { return Action{Op: OpReadlink, Path: path} }

// Hold opens path n times and keeps every file open, in the instance and
// across calls (Result.Data is how many it opened).
func Hold(path string, n int) Action { return Action{Op: OpHold, Path: path, Bytes: n} }

// CreateMany creates n empty files f0, f1, ... in dir (Result.Data is how
// many it created).
func CreateMany(dir string, n int) Action { return Action{Op: OpCreateMany, Path: dir, Bytes: n} }

// List lists the directory path (Result.Data is the names, sorted,
// comma-separated).
func List(path string) Action { return Action{Op: OpList, Path: path} }

// Openat opens the directory dir, then opens rel from it with one WASI
// path_open, read-only, passing rel as it is: the way C and Rust guests name
// paths, where Go's os package would clean them first.
func Openat(dir, rel string) Action { return Action{Op: OpOpenat, Path: dir, To: rel} }

// OpenatBytes is Openat with a path of any bytes, valid UTF-8 or not.
func OpenatBytes(dir string, rel []byte) Action {
	return Action{Op: OpOpenat, Path: dir, RawPath: rel}
}

// Creating returns the openat action a creating rel for writing instead.
func (a Action) Creating() Action { a.Create = true; return a }
