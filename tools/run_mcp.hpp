#pragma once
// mayura-run mcp: an MCP server (stdio) of the agent tools, over one sandbox
// made with mayura-run's options.

namespace mayura::tools {

// argv[0] is "mcp". Serves until its input ends or a stop signal comes;
// the sandbox is then released. 0, or 125 for bad input or a failed start.
int run_mcp_command(int argc, char** argv);

}  // namespace mayura::tools
