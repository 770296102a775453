package process

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// Child is an executor process started by Start.
type Child struct {
	// Ready is what it printed once it listened: its URL, where it takes
	// pushes (executor.Remote's URL), and what its handlers handle.
	Ready
	cmd  *exec.Cmd
	done chan error
}

// Start runs the executor binary bin (built by wasmbuild.BuildExecutor
// for the Process target) for the API at url, and waits for the line it
// prints once it listens. Its log goes to stderr.
func Start(ctx context.Context, bin, url, token string, stderr io.Writer) (*Child, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "STILE_URL="+url, "STILE_TOKEN="+token)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the executor %s: %w", bin, err)
	}
	c := &Child{cmd: cmd, done: make(chan error, 1)}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		io.Copy(io.Discard, out)
	}()
	go func() { c.done <- cmd.Wait() }()
	select {
	case l, ok := <-line:
		var r Ready
		if !ok || json.Unmarshal([]byte(l), &r) != nil || r.URL == "" {
			cmd.Process.Kill()
			return nil, fmt.Errorf("the executor %s did not start (it printed %q)", bin, l)
		}
		c.Ready = r
		return c, nil
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, errors.New("the executor did not start within 30 s")
	case <-ctx.Done():
		cmd.Process.Kill()
		return nil, ctx.Err()
	}
}

// Stop asks the executor to stop (SIGINT: running handlers finish), and
// kills it after grace.
func (c *Child) Stop(grace time.Duration) error {
	c.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-c.done:
		return err
	case <-time.After(grace):
		c.cmd.Process.Kill()
		return <-c.done
	}
}
