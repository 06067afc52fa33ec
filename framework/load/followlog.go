package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FollowedLog is a container's log streamed from a start time for as long
// as it is followed (`kubectl logs -f --since-time=... --timestamps`).
//
// A log read after the fact (PodLogs.Logs) is only the kubelet's current
// log file: once the container has written more than the kubelet's
// containerLogMaxSize (10 MiB by default) the file is rotated, and what the
// rotated files hold is no longer served. A sidecar's access log at GUIDE's
// 100 qps for 10 minutes is 60,000 lines, several rotations. The kubelet's
// follower reopens the file when it rotates, so a log followed from before
// the load keeps every line. It implements LogSource.
type FollowedLog struct {
	src    PodLogs
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	text  strings.Builder
	lines int
	last  string // the last line's timestamp
	ended error  // why the stream ended; nil while it runs
}

// Follow starts streaming the container's log from since. The stream runs
// until Stop (or ctx ends); an error opening it is returned now, one that
// ends it early is returned by Logs.
func (p PodLogs) Follow(ctx context.Context, since time.Time) (*FollowedLog, error) {
	if p.Client == nil || p.Namespace == "" || p.Pod == "" {
		return nil, fmt.Errorf("load.PodLogs: Client, Namespace and Pod are required (got namespace %q, pod %q)", p.Namespace, p.Pod)
	}
	ctx, cancel := context.WithCancel(ctx)
	st := metav1.NewTime(since.Add(-time.Second).Truncate(time.Second))
	rc, err := p.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Pod, &corev1.PodLogOptions{
		Container:  p.Container,
		SinceTime:  &st,
		Timestamps: true,
		Follow:     true,
	}).Stream(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("load.PodLogs: following the log of pod %s/%s container %q: %w", p.Namespace, p.Pod, p.Container, err)
	}
	f := &FollowedLog{src: p, cancel: cancel, done: make(chan struct{})}
	go f.read(ctx, rc)
	return f, nil
}

func (f *FollowedLog) read(ctx context.Context, rc io.ReadCloser) {
	defer close(f.done)
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		f.mu.Lock()
		f.text.WriteString(line)
		f.text.WriteByte('\n')
		f.lines++
		if stamp, _, ok := strings.Cut(line, " "); ok {
			f.last = stamp
		}
		f.mu.Unlock()
	}
	err := sc.Err()
	switch {
	case ctx.Err() != nil:
		err = errStopped
	case err == nil:
		// The container ended: everything it wrote was read.
		err = io.EOF
	}
	f.mu.Lock()
	f.ended = err
	f.mu.Unlock()
}

var errStopped = errors.New("stopped")

// Logs gives the followed lines stamped between since and until (widened
// by a second on each side, as PodLogs is), or an error when the stream
// broke before Stop: the log may then lack lines, and a reader must not
// take it as whole.
func (f *FollowedLog) Logs(_ context.Context, since, until time.Time) (string, error) {
	f.mu.Lock()
	text, ended, last := f.text.String(), f.ended, f.last
	f.mu.Unlock()
	if ended != nil && ended != io.EOF && ended != errStopped {
		return "", fmt.Errorf("load.FollowedLog: the log of pod %s/%s container %q stopped streaming after the line stamped %s: %w", f.src.Namespace, f.src.Pod, f.src.Container, last, ended)
	}
	from := since.Add(-time.Second)
	var b strings.Builder
	for line := range strings.SplitSeq(filterTimestamped(text, until.Add(time.Second)), "\n") {
		if stamp, _, ok := strings.Cut(line, " "); ok {
			if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil && t.Before(from) {
				continue
			}
		}
		if line != "" {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// Lines is how many lines the stream has delivered so far.
func (f *FollowedLog) Lines() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lines
}

// Stop ends the stream and waits until its reader is done. Logs still
// gives what was read.
func (f *FollowedLog) Stop() {
	f.cancel()
	<-f.done
}
