"""``memlab serve`` (agents over HTTP, one per session), ``memlab mcp`` (memory over MCP) and
``memlab goodai-rescore``."""

from __future__ import annotations

import argparse

from memlab.cli.common import RAW, add_model_options, names, port, registered
from memlab.memory.base import MEMORIES

SERVE_HELP = """\
Serve memlab agents over HTTP (FastAPI; OpenAPI page at /docs). Each session has its own agent
and its own memory under WORKDIR/sessions/<id>/; sessions never see each other's memory.

  POST   /sessions                  {"condition", "user_id", "agent_id", "options"} -> {"id", ...}
  POST   /sessions/{id}/turn        {"message", "history"?, "timestamp"?, "max_tokens"?} -> reply + trace
  POST   /sessions/{id}/observe     {"user", "assistant", "timestamp"?}: store without generating
  POST   /sessions/{id}/sleep       run the condition's sleep cycle now
  DELETE /sessions/{id}             forget the session (its memory and journal)
  GET    /sessions/{id}/memory      what it stored (?query=... adds what it recalls)
  POST   /turn                      the seed's BenchmarkTurnPayload, on a default session
  POST   /docqa/ask                 {"text", "user_id"?, "session_id"?}: document QA (seed 001)
                                    over the chunks `memlab docqa ingest` stored in --docs

A turn is acknowledged (200) only once it is stored and journaled (fsync). SIGTERM finishes the
requests in flight, then exits. Beyond loopback MEMLAB_API_TOKEN is required (bearer token).
"""


MCP_HELP = """\
Serve a memory condition over MCP (Model Context Protocol), so an MCP client (an agent
harness, another benchmark, `memlab run -c mcp`) uses it as its memory. Tools:

  observe   {"user_message", "assistant_message", "timestamp"?}: store one exchange
  recall    {"query"}: the memory items (with their turn numbers) and verbatim history
  sleep     run the condition's consolidation cycle now
  reset     empty a memory;  forget: remove it and its journal

Every tool takes "user" and "session" (default "user", "default"): each pair is its own memory,
isolated like a `memlab serve` session, under WORKDIR/sessions/. HTTP listens on loopback only
(http://127.0.0.1:PORT/mcp); with --transport stdio the protocol runs on standard input and
output and everything else goes to standard error.
"""


def register(commands) -> dict:
    rescore = commands.add_parser(
        "goodai-rescore", help="re-score published GoodAI LTM results with memlab's scorers",
        description="Re-score a folder of GoodAI result files (<agent>/<Test Type>/<id>_<rep>.json)"
                    " and print, per test type, how many published scores memlab reproduces.",
        epilog="example: memlab goodai-rescore --goodai-scorers published "
               "../shared/data/goodai-ltm-v3-1k/results")
    rescore.add_argument("dir", help="folder of GoodAI result files")
    rescore.add_argument("--goodai-scorers", choices=("current", "published", "strict"),
                         default="current",
                         help="GoodAI's scoring today (current, default), the 2024-05 scoring "
                              "the published v3 results were scored with (published), or "
                              "memlab's own runs' set (strict: Colours by whole word)")
    rescore.add_argument("--all", action="store_true",
                         help="list every disagreement (default: the first 20)")

    serve = commands.add_parser(
        "serve", help="serve agents over HTTP, one per session (FastAPI)",
        description=SERVE_HELP, formatter_class=RAW,
        epilog="example: memlab serve --condition rag --port 8765")
    serve.add_argument("-c", "--condition", default="rag", type=registered(MEMORIES),
                       metavar="CONDITION",
                       help=f"default condition of new sessions: {names(MEMORIES)} (default rag)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default loopback; beyond it needs MEMLAB_API_TOKEN)")
    serve.add_argument("--port", type=port, default=8765, help="TCP port (default 8765)")
    serve.add_argument("--workdir", default="results/serve",
                       help="folder of the sessions' journals and stores (default results/serve)")
    serve.add_argument("--docs", default="results/docqa",
                       help="docqa workdir that POST /docqa/ask answers from (default "
                            "results/docqa, where `memlab docqa ingest` stores chunks)")
    add_model_options(serve)

    mcp = commands.add_parser(
        "mcp", help="serve a condition's memory over MCP (streamable HTTP or stdio)",
        description=MCP_HELP, formatter_class=RAW,
        epilog="examples:\n  memlab mcp --condition rag --port 8766\n"
               "  memlab run -c mcp -s ltm -o url=http://127.0.0.1:8766/mcp")
    mcp.add_argument("-c", "--condition", default="rag", choices=MEMORIES.names(),
                     metavar="CONDITION",
                     help=f"the memory served: {names(MEMORIES)} (default rag)")
    mcp.add_argument("--transport", choices=("http", "stdio"), default="http",
                     help="streamable HTTP on loopback (default) or stdio (an MCP client "
                          "starts the command)")
    mcp.add_argument("--port", type=port, default=8766,
                     help="TCP port on 127.0.0.1 for --transport http (default 8766; 0: any "
                          "free port, printed)")
    mcp.add_argument("--workdir", default="results/mcp",
                     help="folder of the memories' journals and stores (default results/mcp)")
    add_model_options(mcp)
    return {"goodai-rescore": cmd_goodai_rescore, "serve": cmd_serve, "mcp": cmd_mcp}


def cmd_goodai_rescore(args: argparse.Namespace) -> int:
    from memlab.bench.goodai import format_rescore_report, goodai_rescore

    report = goodai_rescore(args.dir, scorers=args.goodai_scorers)
    print(format_rescore_report(report, max_listed=None if args.all else 20))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from memlab import lab
    from memlab.server import serve
    from memlab.userfiles import writable_folder

    writable_folder(args.workdir, "--workdir")  # a file there is the user's mistake: exit 2
    serve(condition=args.condition, llm=lab.make_llm(args.llm, args.llm_model),
          embedder=lab.make_embedder(args.embedder), workdir=args.workdir, host=args.host,
          port=args.port, docs=args.docs)
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from memlab import lab
    from memlab.memory.mcp_client import require_mcp
    from memlab.server.mcp_server import serve_mcp
    from memlab.userfiles import writable_folder

    require_mcp()
    writable_folder(args.workdir, "--workdir")
    serve_mcp(condition=args.condition, llm=lab.make_llm(args.llm, args.llm_model),
              embedder=lab.make_embedder(args.embedder), workdir=args.workdir,
              transport=args.transport, port=args.port)
    return 0

