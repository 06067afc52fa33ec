package load

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	flog "fortio.org/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// LogSource gives the fortio client's log text written between since and
// until. A source may return more than the window (the engine filters by run
// id), never knowingly less.
type LogSource interface {
	Logs(ctx context.Context, since, until time.Time) (string, error)
}

// PodLogs reads the logs of the fortio client's container, like `kubectl logs
// --since-time=... --timestamps`. The API's since-time has one-second
// granularity, so the window is widened by a second on each side; lines are
// matched to the run by fortio's run id afterwards.
type PodLogs struct {
	Client    kubernetes.Interface
	Namespace string
	Pod       string
	Container string // "" when the pod has one container
}

// Logs implements LogSource.
func (p PodLogs) Logs(ctx context.Context, since, until time.Time) (string, error) {
	if p.Client == nil || p.Namespace == "" || p.Pod == "" {
		return "", fmt.Errorf("load.PodLogs: Client, Namespace and Pod are required (got namespace %q, pod %q)", p.Namespace, p.Pod)
	}
	st := metav1.NewTime(since.Add(-time.Second).Truncate(time.Second))
	raw, err := p.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Pod, &corev1.PodLogOptions{
		Container:  p.Container,
		SinceTime:  &st,
		Timestamps: true,
	}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("load.PodLogs: logs of pod %s/%s container %q: %w", p.Namespace, p.Pod, p.Container, err)
	}
	return filterTimestamped(string(raw), until.Add(time.Second)), nil
}

// filterTimestamped drops lines whose leading RFC 3339 timestamp is after
// until; lines without one are kept.
func filterTimestamped(text string, until time.Time) string {
	var b strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		if first, _, ok := strings.Cut(line, " "); ok {
			if t, err := time.Parse(time.RFC3339Nano, first); err == nil && t.After(until) {
				continue
			}
		}
		if line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// CapturedLog is fortio's in-process logger output, kept in memory with the
// time each line was written. It is the LogSource for a fortio client that
// runs inside the test process (loopback), where fortio.org/log is global.
type CapturedLog struct {
	mu      sync.Mutex
	lines   []capturedLine
	partial []byte
	tee     io.Writer
}

type capturedLine struct {
	at   time.Time
	text string
}

var (
	captureOnce sync.Once
	captured    *CapturedLog
)

// CaptureFortioLog redirects fortio's logger (process-wide) into a
// CapturedLog and returns it; later calls return the same one. If tee is
// non-nil on the first call, every line is also written there. The log level
// is lowered to Info if it was above: the dead-socket and "Run ended" lines
// the engine relies on are Info lines.
func CaptureFortioLog(tee io.Writer) *CapturedLog {
	captureOnce.Do(func() {
		captured = &CapturedLog{tee: tee}
		flog.SetOutput(captured) // also detects "not a console": JSON lines
		if flog.GetLogLevel() > flog.Info {
			flog.SetLogLevelQuiet(flog.Info)
		}
	})
	return captured
}

// Write implements io.Writer for fortio's logger.
func (c *CapturedLog) Write(p []byte) (int, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tee != nil {
		_, _ = c.tee.Write(p)
	}
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.lines = append(c.lines, capturedLine{at: now, text: string(c.partial[:i])})
		c.partial = c.partial[i+1:]
	}
	return len(p), nil
}

// Logs implements LogSource: the lines written in [since, until].
func (c *CapturedLog) Logs(_ context.Context, since, until time.Time) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, l := range c.lines {
		if l.at.Before(since) || l.at.After(until) {
			continue
		}
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// Forget drops the lines written before t (to bound memory in long tests).
func (c *CapturedLog) Forget(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := 0
	for i < len(c.lines) && c.lines[i].at.Before(t) {
		i++
	}
	c.lines = append([]capturedLine(nil), c.lines[i:]...)
}
