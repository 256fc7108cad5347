package station

import (
	"cmp"
	"context"

	"github.com/station-dev/station/internal/execgate"
	"github.com/station-dev/station/internal/fsgate"
	"github.com/station-dev/station/internal/netgate"
	"github.com/station-dev/station/manifest"
)

// Limits are the limits a module runs under, as `station module show`
// prints them: its manifest's limits resolved against the operator's
// defaults and maxima, and the station's bounds on what it may take.
type Limits struct {
	MemoryBytes      uint64 `json:"memory_bytes"`
	Timeout          string `json:"timeout"`
	Concurrency      int    `json:"concurrency"`
	FreshInstance    bool   `json:"fresh_instance_per_call"`
	MaxInputBytes    int    `json:"max_input_bytes"`
	MaxOutputBytes   int    `json:"max_output_bytes"`
	MaxRequestBytes  int    `json:"max_request_bytes"`  // a host call's request document
	MaxResponseBytes int64  `json:"max_response_bytes"` // an HTTP response body
	// Files is set for a module with filesystem grants.
	Files *FileLimits `json:"files,omitempty"`
	// ProgramOutputBytes is set for a module that starts programs: how
	// much of a child's stdout and of its stderr the module gets.
	ProgramOutputBytes int64 `json:"program_output_bytes,omitempty"`
}

// FileLimits are a module's bounds on files, with what it uses now.
type FileLimits struct {
	QuotaBytes           int64 `json:"quota_bytes"`
	UsedBytes            int64 `json:"used_bytes"`
	Entries              int64 `json:"entries"`
	UsedEntries          int64 `json:"used_entries"`
	OpenFiles            int64 `json:"open_files"`
	OpenFilesPerInstance int64 `json:"open_files_per_instance"`
}

// LimitsOf returns the limits the module with manifest m runs under.
func (s *Station) LimitsOf(ctx context.Context, m *manifest.Manifest) (Limits, error) {
	l, err := s.Host.ResolveLimits(m.Limits)
	if err != nil {
		return Limits{}, err
	}
	out := Limits{
		MemoryBytes: l.MemoryBytes, Timeout: l.Timeout.String(), Concurrency: l.Concurrency, FreshInstance: l.Fresh,
		MaxInputBytes: l.MaxInput, MaxOutputBytes: l.MaxOutput, MaxRequestBytes: l.MaxArg,
		MaxResponseBytes: netgate.DefaultMaxResponseBytes,
	}
	if r := m.Requires; len(r.FilesystemWrites)+len(r.FilesystemReads) > 0 {
		u, err := s.Store.LoadUsage(ctx, m.ID)
		if err != nil {
			return Limits{}, err
		}
		fc := s.Config.Filesystem
		out.Files = &FileLimits{
			QuotaBytes:           cmp.Or(int64(fc.Quota), fsgate.DefaultQuotaBytes),
			UsedBytes:            u.Bytes,
			Entries:              cmp.Or(int64(fc.Entries), fsgate.DefaultEntries),
			UsedEntries:          u.Entries,
			OpenFiles:            cmp.Or(int64(fc.OpenFiles), fsgate.DefaultOpenFiles),
			OpenFilesPerInstance: cmp.Or(int64(fc.OpenFilesPerInstance), fsgate.DefaultOpenFilesPerInstance),
		}
	}
	if sp := m.Requires.Subprocess; sp.Any || len(sp.Allow) > 0 {
		out.ProgramOutputBytes = execgate.DefaultMaxOutput
	}
	return out, nil
}
