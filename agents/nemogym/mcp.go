package nemogym

import (
	"net/http"
)

// NeMo Gym's MCP-native agents (claude_code_agent and the other CLI
// agents) play a resources server's tools over MCP: seed_session's reply
// names the endpoint (its "mcp" key: a url_path under the resources
// server's base URL and the headers to send), and the agent's CLI calls it
// over streamable HTTP with the session's token in X-NeMo-Gym-Session-Token
// on every request. Here the endpoint is /nemo/mcp, which hands each
// request to the serve's MCP server (Config.MCP) under the seat's own
// token: the tools, observations and turns are those of corpsim mcp.

const (
	// MCPMetadataKey is the key of seed_session's reply that offers MCP
	// (NeMo Gym's NEMO_GYM_MCP_METADATA_KEY).
	MCPMetadataKey = "mcp"
	// MCPTokenHeader carries the session's token on every MCP request
	// (NeMo Gym's NEMO_GYM_MCP_SESSION_TOKEN_HEADER).
	MCPTokenHeader = "X-NeMo-Gym-Session-Token"
	// MCPServerName is the server name the metadata gives the agent
	// (its tools are then mcp__corpsim__claim, …).
	MCPServerName = "corpsim"
)

// mcpMetadata is the "mcp" of seed_session's reply (NeMo Gym's
// MCPServerMetadata).
type mcpMetadata struct {
	ServerName string            `json:"server_name"`
	URLPath    string            `json:"url_path"`
	Transport  string            `json:"transport"`
	Headers    map[string]string `json:"headers"`
}

// handleMCP serves /nemo/mcp: the session named by the request's
// X-NeMo-Gym-Session-Token (a token of its own, not its cookie: it reaches
// nothing but this route) is kept busy while
// the request lasts (an agent that plays over MCP alone is not idle), and
// the request goes to the MCP server with the seat's token as its bearer
// token, the session token taken off. A request without a token of a
// session held is refused 401, as the MCP server refuses a bad bearer.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	tok := r.Header.Get(MCPTokenHeader)
	s.mu.Lock()
	ss := s.mcpKeys[tok]
	if ss != nil && tok != "" {
		ss.busy++
		ss.last = s.cfg.Now()
	}
	s.mu.Unlock()
	if ss == nil || tok == "" {
		s.fail(w, http.StatusUnauthorized, CodeNoSession, "no NeMo Gym session has this "+MCPTokenHeader+": seed_session's reply gives it (its \"mcp\" headers)")
		return
	}
	defer s.release(ss)
	r2 := r.Clone(r.Context())
	r2.Header.Del(MCPTokenHeader)
	r2.Header.Set("Authorization", "Bearer "+ss.token)
	r2.URL.Path, r2.URL.RawPath = "/mcp", ""
	s.cfg.MCP.ServeHTTP(w, r2)
	// An MCP session this request opened while the NeMo Gym session was
	// let go escaped that CloseSeat: close it now.
	s.mu.Lock()
	gone := s.mcpKeys[tok] != ss
	s.mu.Unlock()
	if gone {
		s.closeMCP(ss)
	}
}
