package cli

import (
	"github.com/corpsim/corpsim/agents/natsserver"

	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const busURLFile = "bus.url"

// writeBusURL records where a running corpsim's NATS server listens, so that
// other processes (which cannot open the locked store) can follow it.
func writeBusURL(dir, url string) error {
	return os.WriteFile(filepath.Join(dir, busURLFile), []byte(url+"\n"), 0o644)
}

func removeBusURL(dir string) { _ = os.Remove(filepath.Join(dir, busURLFile)) }

func readBusURL(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, busURLFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// isLocked reports whether opening the store failed because another process holds it.
func isLocked(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "resource temporarily unavailable") || strings.Contains(err.Error(), "lock")
}

// inUseError reports a data folder that another process holds open.
type inUseError struct{ msg string }

func (e *inUseError) Error() string { return e.msg }

const operatorTokenFile = "operator.token"

// operatorToken reads DATA/operator.token, making it if it does not exist
// (an ephemeral run gets a fresh token that is not written).
func operatorToken(dir string, ephemeral bool) (string, error) {
	if ephemeral || dir == "" {
		return natsserver.NewToken(), nil
	}
	path := filepath.Join(dir, operatorTokenFile)
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tok := natsserver.NewToken()
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// readOperatorToken returns DATA/operator.token, or "".
func readOperatorToken(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, operatorTokenFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
