"""The MCP front end: every core operation as a tool over stdio, built on the official ``mcp`` SDK."""
