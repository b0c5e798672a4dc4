"""``memlab serve`` (an agent over HTTP) and ``memlab goodai-rescore``."""

from __future__ import annotations

import argparse

from memlab.cli.common import add_model_options, check_port_free, names, port_number
from memlab.memory.base import MEMORIES


def register(commands) -> dict:
    rescore = commands.add_parser(
        "goodai-rescore", help="re-score published GoodAI LTM results with memlab's scorers",
        description="Re-score a folder of GoodAI result files (<agent>/<Test Type>/<id>_<rep>.json)"
                    " and print, per test type, how many published scores memlab reproduces.",
        epilog="example: memlab goodai-rescore ../shared/data/goodai-ltm-v3-1k/results")
    rescore.add_argument("dir", help="folder of GoodAI result files")

    serve = commands.add_parser(
        "serve", help="serve one agent over HTTP (BenchmarkTurnPayload in, reply out)",
        description="POST /turn with {\"history\": ..., \"message\": ...} returns the reply and "
                    "its trace; GET /health. Loopback by default.",
        epilog="example: memlab serve --condition rag --port 8765")
    serve.add_argument("-c", "--condition", default="rag", choices=MEMORIES.names(),
                       metavar="CONDITION", help=f"one of: {names(MEMORIES)} (default rag)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8765)
    serve.add_argument("--workdir", default="results/serve", help="folder of the agent's stores")
    add_model_options(serve)
    return {"goodai-rescore": cmd_goodai_rescore, "serve": cmd_serve}


def cmd_goodai_rescore(args: argparse.Namespace) -> int:
    from memlab.bench.goodai import format_rescore_report, goodai_rescore

    print(format_rescore_report(goodai_rescore(args.dir)))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from memlab import lab
    from memlab.server import serve

    check_port_free(args.host, args.port)
    llm = lab.make_llm(args.llm, args.llm_model)
    agent = lab.make_agent(args.condition, llm=llm, workdir=args.workdir,
                           embedder=lab.make_embedder(args.embedder))
    serve(agent, args.host, args.port, condition=args.condition)
    return 0
