package ackgapvet

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// changedLines maps an absolute file path to its changed line ranges
// (1-based, inclusive, in the new version).
type changedLines map[string][][2]int

// gitChanges returns the lines changed between base (a commit, branch or
// tag) and the working tree in the git repository holding dir: `git diff
// -U0 <base>`, new-side hunks. Deleted lines count on the line after them.
// Files git does not track yet (a new consumer not yet added; `git
// ls-files --others --exclude-standard`, so not the ignored ones) count as
// changed in full. It returns an error when git fails (no repository,
// unknown base).
func gitChanges(dir, base string) (changedLines, error) {
	top, err := exec.Command("git", "-C", dir, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return nil, fmt.Errorf("-diff %s: %s is not in a git work tree: %w", base, dir, err)
	}
	root := strings.TrimSpace(string(top))
	cmd := exec.Command("git", "-C", root, "diff", "-U0", "--no-color", "--no-ext-diff", base, "--")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("-diff %s: git diff: %v: %s", base, err, strings.TrimSpace(stderr.String()))
	}
	ch := parseUnifiedDiff(root, out)
	untracked, err := exec.Command("git", "-C", root, "ls-files", "--others", "--exclude-standard", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("-diff %s: git ls-files: %w", base, err)
	}
	for _, name := range strings.Split(string(untracked), "\x00") {
		if name != "" {
			ch[filepath.Join(root, filepath.FromSlash(name))] = [][2]int{{1, math.MaxInt32}}
		}
	}
	return ch, nil
}

// parseUnifiedDiff reads the "+++ b/<file>" and "@@ -a,b +c,d @@" lines of
// a zero-context unified diff.
func parseUnifiedDiff(root string, diff []byte) changedLines {
	ch := changedLines{}
	var file string
	sc := bufio.NewScanner(bytes.NewReader(diff))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "+++ "):
			name := strings.TrimPrefix(line, "+++ ")
			if name == "/dev/null" {
				file = ""
				continue
			}
			file = filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(name, "b/")))
		case strings.HasPrefix(line, "@@ ") && file != "":
			fields := strings.Fields(line)
			if len(fields) < 3 {
				continue
			}
			start, count := hunkRange(strings.TrimPrefix(fields[2], "+"))
			end := start + count - 1
			if count == 0 { // a deletion: the line after it changed
				end = start + 1
			}
			ch[file] = append(ch[file], [2]int{start, end})
		}
	}
	return ch
}

// hunkRange parses "c,d" or "c" of a hunk header.
func hunkRange(s string) (start, count int) {
	a, b, ok := strings.Cut(s, ",")
	start, _ = strconv.Atoi(a)
	count = 1
	if ok {
		count, _ = strconv.Atoi(b)
	}
	return start, count
}

// touches reports whether a change falls in one of the consumer's
// functions.
func (c *Consumer) touches(ch changedLines) bool {
	for _, s := range c.spans {
		for _, r := range ch[s.file] {
			if r[0] <= s.end && r[1] >= s.start {
				return true
			}
		}
	}
	return false
}

// keepChanged narrows the report to the consumers whose reachable code the
// change touches, and to the findings inside their functions.
func (rep *Report) keepChanged(ch changedLines) {
	var cs []Consumer
	for _, c := range rep.Consumers {
		if c.touches(ch) {
			cs = append(cs, c)
		}
	}
	var fs []Finding
	for _, f := range rep.Findings {
		for i := range cs {
			if cs[i].reaches(f.abs, f.Line) {
				fs = append(fs, f)
				break
			}
		}
	}
	rep.Consumers, rep.Findings = cs, fs
}
