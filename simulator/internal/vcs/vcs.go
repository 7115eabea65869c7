// Package vcs asks git which code a run used: the commit, whether the work
// tree differs from it, and an identity of the tree's content, so that
// reports of the same code can be found again. reports/ is left out of all
// of it: writing a report must not make the next run "dirty".
package vcs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// excludeReports is the pathspec that leaves reports/ out.
var pathspec = []string{"--", ".", ":(exclude)reports"}

// State is the code a work tree holds.
type State struct {
	// Commit is HEAD's full hash.
	Commit string
	// Dirty is true when tracked files differ from HEAD or untracked,
	// non-ignored files exist (reports/ aside).
	Dirty bool
	// Tree identifies the content: HEAD's tree hash when clean, otherwise
	// "sha256:" over HEAD, the diff against it and the untracked files.
	Tree string
}

// Git runs git in dir and returns its trimmed stdout.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Describe returns the state of the work tree at dir.
func Describe(ctx context.Context, dir string) (State, error) {
	commit, err := Git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return State{}, err
	}
	status, err := Git(ctx, dir, append([]string{"status", "--porcelain"}, pathspec...)...)
	if err != nil {
		return State{}, err
	}
	st := State{Commit: commit, Dirty: status != ""}
	if !st.Dirty {
		st.Tree, err = Git(ctx, dir, "rev-parse", "HEAD^{tree}")
		return st, err
	}
	h := sha256.New()
	io.WriteString(h, commit+"\n")
	diff, err := Git(ctx, dir, append([]string{"diff", "--binary", "HEAD"}, pathspec...)...)
	if err != nil {
		return State{}, err
	}
	io.WriteString(h, diff+"\n")
	untracked, err := Git(ctx, dir, append([]string{"ls-files", "--others", "--exclude-standard"}, pathspec...)...)
	if err != nil {
		return State{}, err
	}
	for _, f := range strings.Split(untracked, "\n") {
		if f == "" {
			continue
		}
		io.WriteString(h, f+"\n")
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err == nil {
			h.Write(data)
		}
	}
	st.Tree = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return st, nil
}

// Resolve turns a ref into a commit hash and its tree hash.
func Resolve(ctx context.Context, dir, ref string) (commit, tree string, err error) {
	commit, err = Git(ctx, dir, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return "", "", err
	}
	tree, err = Git(ctx, dir, "rev-parse", commit+"^{tree}")
	return commit, tree, err
}

// Root returns the top directory of the work tree at dir.
func Root(ctx context.Context, dir string) (string, error) {
	return Git(ctx, dir, "rev-parse", "--show-toplevel")
}
