package mcpseat

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogTo is a slog.Handler writing to an hclog.Logger: the MCP SDK logs
// through log/slog, corpsim through hclog.
type slogTo struct {
	log   hclog.Logger
	attrs []any
	group string
}

func newSlog(l hclog.Logger) *slog.Logger { return slog.New(&slogTo{log: l}) }

func hclogLevel(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	case l >= slog.LevelInfo:
		// The SDK reports every session and request at Info: for corpsim
		// that is debugging detail.
		return hclog.Debug
	default:
		return hclog.Trace
	}
}

func (h *slogTo) Enabled(_ context.Context, l slog.Level) bool {
	lv := hclogLevel(l)
	cur := h.log.GetLevel()
	return cur != hclog.Off && lv >= cur
}

func (h *slogTo) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.key(a.Key), a.Value.Resolve().Any())
		return true
	})
	h.log.Log(hclogLevel(r.Level), r.Message, args...)
	return nil
}

func (h *slogTo) key(k string) string {
	if h.group != "" {
		return h.group + "." + k
	}
	return k
}

func (h *slogTo) WithAttrs(as []slog.Attr) slog.Handler {
	out := *h
	out.attrs = append([]any(nil), h.attrs...)
	for _, a := range as {
		out.attrs = append(out.attrs, h.key(a.Key), a.Value.Resolve().Any())
	}
	return &out
}

func (h *slogTo) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	out := *h
	out.group = h.key(name)
	return &out
}
