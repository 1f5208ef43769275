package mcpserver

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"munin/internal/memory"
)

// RefusedMessage is the JSON-RPC answer to a message refused before mcp-go
// reads it — memory.CheckJSONText failed, e.g. a duplicate member name —
// on either transport: an Invalid Request error whose message is the
// public "invalid: …" text, carrying the request's id if it can be read
// unambiguously (else null, as JSON-RPC asks).
func RefusedMessage(msg []byte, err error) []byte {
	b, merr := json.Marshal(mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(requestID(msg)),
		Error:   mcp.JSONRPCErrorDetails{Code: mcp.INVALID_REQUEST, Message: memory.PublicMessage(err)},
	})
	if merr != nil { // cannot happen: every part is plain data
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request"}}`)
	}
	return b
}

// requestID returns the id of a JSON-RPC request object: a string or number
// given once (names matched ignoring case, as mcp-go's decoder does), or nil.
func requestID(msg []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	ids := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if strings.EqualFold(name, "id") {
			id, ids = v, ids+1
		}
	}
	if ids != 1 || len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		return nil
	}
	return id
}
