package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// SecretEnv is the environment variable the commands that start sessions
// (run, eval, sweep, serve) read an operator's secret from when
// --secret-file is not given.
const SecretEnv = "CORPSIM_SECRET"

// maxSecretBytes bounds a secret file: a secret is a few dozen bytes, and
// a larger file is a mistake (a world file, a log) rather than a secret.
const maxSecretBytes = 4096

// secretFlag is --secret-file, of the commands that start sessions.
type secretFlag struct{ file string }

func (s *secretFlag) add(c *cobra.Command) {
	c.Flags().StringVar(&s.file, "secret-file", "", "key the draws of new sessions with the secret in this file (default: $"+SecretEnv+
		"): their hidden rules and facts, arrivals and efforts cannot be worked out from the seed by whoever lacks it; the log keeps a key derived from it and the seed, so replay, fork and resume need no secret")
}

// read returns the secret: the file's contents without a final line
// break, or $CORPSIM_SECRET's; nil when neither is given.
func (s *secretFlag) read() ([]byte, error) {
	if s.file == "" {
		if v := os.Getenv(SecretEnv); v != "" {
			return []byte(v), nil
		}
		return nil, nil
	}
	f, err := os.Open(s.file)
	if err != nil {
		return nil, usage(fmt.Errorf("--secret-file: %w", err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSecretBytes+3)) // the secret, a line break, one byte more
	if err != nil {
		return nil, usage(fmt.Errorf("--secret-file: %w", err))
	}
	// Its final line break alone (as an editor or echo ends the file):
	// "s\n\n" is another secret than "s\n".
	if b2, ok := bytes.CutSuffix(b, []byte("\n")); ok {
		b, _ = bytes.CutSuffix(b2, []byte("\r"))
	}
	if len(b) > maxSecretBytes {
		return nil, usage(fmt.Errorf("--secret-file %s: larger than %d bytes, which no secret needs (is it the right file?)", s.file, maxSecretBytes))
	}
	if len(b) == 0 {
		return nil, usage(fmt.Errorf("--secret-file %s is empty", s.file))
	}
	return b, nil
}

// keyedNote is what a result's world line adds for sessions whose draws
// were keyed with a secret.
func keyedNote(keyed bool) string {
	if keyed {
		return ", draws keyed by a secret"
	}
	return ""
}
