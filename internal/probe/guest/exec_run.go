//go:build probe_exec

package main

import (
	"context"

	"github.com/station-dev/station/internal/probe"
	"github.com/station-dev/station/sdk/sproc"
)

func doExec(ctx context.Context, a probe.Action, r *probe.Result) error {
	res, err := (&sproc.Cmd{Args: a.Argv, Env: a.ExecEnv, Stdin: []byte(a.Data), Dir: a.Path, Partial: a.Partial}).Run(ctx)
	if res != nil {
		code := res.ExitCode
		r.ExitCode = &code
		r.Stdout = string(res.Stdout[:min(len(res.Stdout), probe.MaxBody)])
		r.Stderr = string(res.Stderr[:min(len(res.Stderr), probe.MaxBody)])
		r.StdoutLen = len(res.Stdout)
		r.Truncated, r.Limit, r.StdoutDropped = res.Truncated, res.Limit, res.StdoutDropped
	}
	return err
}
