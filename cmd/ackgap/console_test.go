package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockedBuffer is an output stream the test reads while the command
// writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startConsole runs "ackgap console" on a free loopback port and returns
// its base URL, its stderr and a stop func that returns the exit code.
func startConsole(t *testing.T, c *cli, extra map[string]string, args ...string) (string, *lockedBuffer, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &lockedBuffer{}, &lockedBuffer{}
	merged := map[string]string{}
	for k, v := range c.env {
		merged[k] = v
	}
	for k, v := range extra {
		merged[k] = v
	}
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, &env{args: append(append([]string{"console", "--listen", "127.0.0.1:0"}, args...), c.flags...),
			stdout: out, stderr: errOut, getenv: func(k string) string { return merged[k] }, now: time.Now})
	}()
	addr := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var base string
	require.Eventually(t, func() bool {
		select {
		case c := <-code:
			code <- c
			return true
		default:
		}
		base = addr.FindString(out.String())
		return base != ""
	}, 30*time.Second, 10*time.Millisecond)
	require.NotEmpty(t, base, "the console printed its address; stderr: %s", errOut.String())
	stop := func() int {
		cancel()
		return <-code
	}
	t.Cleanup(func() { cancel() })
	return strings.TrimSuffix(base, "/"), errOut, stop
}

func fetchPage(t *testing.T, client *http.Client, method, u string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestConsole(t *testing.T) {
	eachBackend(t, func(t *testing.T, c *cli, s seeder) {
		seed(t, c, s)
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		defer client.CloseIdleConnections()

		base, _, stop := startConsole(t, c, nil)
		code, body := fetchPage(t, client, http.MethodGet, base+"/", nil)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "<td>billing</td>")
		require.Contains(t, body, "read-only")
		code, body = fetchPage(t, client, http.MethodGet, base+"/outbox?state=dead", nil)
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "charge:order-1")
		require.Contains(t, body, "charge:order-2")
		code, _ = fetchPage(t, client, http.MethodPost, base+"/outbox/redrive", url.Values{"kind": {"charge"}})
		require.Equal(t, http.StatusForbidden, code, "read-only without a token")
		require.Equal(t, exitOK, stop(), "Ctrl-C stops it cleanly")

		base, stderr, stop := startConsole(t, c, map[string]string{"ACKGAP_CONSOLE_TOKEN": "cli-token-0123456789"})
		req, err := http.NewRequest(http.MethodPost, base+"/outbox/redrive", strings.NewReader("kind=charge"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer cli-token-0123456789")
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		require.Contains(t, resp.Header.Get("Location"), "redriven=2")
		require.Equal(t, exitOK, stop())
		require.Contains(t, stderr.String(), `msg="console: redrive" who="bearer token from 127.0.0.1`)
		require.Contains(t, c.ok("outbox", "list", "--state", "dead"), "no outbox rows", "both dead rows redriven")
	})
}

func TestConsoleUsage(t *testing.T) {
	c := &cli{t: t, env: map[string]string{}, flags: []string{"--dsn", "sqlite:" + t.TempDir() + "/x.db"}}
	r := c.run("console", "--listen", "nonsense")
	require.Equal(t, exitUsage, r.code)
	require.Contains(t, r.stderr, `--listen "nonsense"`)
}
