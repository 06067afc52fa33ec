package load

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// brokenReader yields its text, then fails as a broken stream does.
type brokenReader struct{ r io.Reader }

func (b brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errors.New("connection reset by peer")
	}
	return n, err
}

// The followed text is windowed by the lines' own stamps (a second of
// slack each side, as PodLogs); a stream that ended with its container is
// whole, one that broke is an error naming the last line read, never a
// silently shorter log.
func TestFollowedLogWindowAndEnd(t *testing.T) {
	base := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range 10 {
		b.WriteString(base.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano))
		b.WriteString(" line\n")
	}
	read := func(r io.Reader, ctx context.Context) *FollowedLog {
		f := &FollowedLog{src: PodLogs{Namespace: "ns", Pod: "p", Container: "c"}, done: make(chan struct{})}
		f.read(ctx, io.NopCloser(r))
		return f
	}

	whole := read(strings.NewReader(b.String()), context.Background())
	if whole.Lines() != 10 {
		t.Fatalf("lines %d, want 10", whole.Lines())
	}
	got, err := whole.Logs(context.Background(), base.Add(4*time.Second), base.Add(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// [4 s, 6 s] widened to [3 s, 7 s]: five lines.
	if n := strings.Count(got, "\n"); n != 5 || !strings.HasPrefix(got, base.Add(3*time.Second).Format(time.RFC3339Nano)) {
		t.Errorf("window [4 s, 6 s] gave %d lines:\n%s", n, got)
	}

	broken := read(brokenReader{strings.NewReader(b.String())}, context.Background())
	if _, err := broken.Logs(context.Background(), base, base.Add(time.Minute)); err == nil ||
		!strings.Contains(err.Error(), "stopped streaming after the line stamped "+base.Add(9*time.Second).Format(time.RFC3339Nano)) {
		t.Errorf("a broken stream: %v, want an error naming the last line", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stopped := read(brokenReader{strings.NewReader(b.String())}, ctx)
	if _, err := stopped.Logs(context.Background(), base, base.Add(time.Minute)); err != nil {
		t.Errorf("a stream its reader stopped: %v, want its lines", err)
	}
}
