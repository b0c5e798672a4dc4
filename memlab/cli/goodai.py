"""``memlab goodai-run``: memlab as the agent of GoodAI's own LTM Benchmark runner."""

from __future__ import annotations

import argparse
from pathlib import Path

from memlab.cli.common import RAW, add_model_options, names, positive_int, registered, split
from memlab.memory.base import MEMORIES

DESCRIPTION = """\
Run GoodAI's own benchmark runner (its source is not on PyPI: --goodai-src names a checkout)
with a memlab server as its agent, then re-score its result files with memlab's scorers.

The first run copies the checkout into --home and installs its venv from pinned PyPI packages
(about a minute); later runs reuse it. The runner opens a Tk progress window: without DISPLAY it
runs under xvfb-run (apt-get install xvfb). It stays offline: LITELLM_LOCAL_MODEL_COST_MAP=True,
tiktoken's cl100k file from the litellm package, and only test types GoodAI scores without an
LLM by default. Filler reaches memlab through observe (GoodAI's ready-made reply is stored, none
is generated), GoodAI's simulated clock is passed as each message's timestamp, --isolated resets
the session between tests, and the agent reports its tokens at zero cost.

Results: <home>/src/data/tests/<run name>/results/memlab - <condition>/<Test Type>/<id>_0.json
"""


def register(commands) -> dict:
    run = commands.add_parser(
        "goodai-run", help="memlab as the agent of GoodAI's own benchmark runner",
        description=DESCRIPTION, formatter_class=RAW,
        epilog="example: memlab goodai-run --goodai-src ../shared/goodai-ltm-benchmark "
               "--definitions ../shared/data/goodai-ltm-v3-1k/definitions -c rag")
    run.add_argument("--goodai-src", required=True, help="GoodAI LTM Benchmark source folder")
    run.add_argument("--definitions", required=True,
                     help="GoodAI definitions folder (config.yml + <Test Type>/<id>.def.json)")
    run.add_argument("-c", "--condition", default="rag", type=registered(MEMORIES),
                     metavar="CONDITION", help=f"one of: {names(MEMORIES)} (default rag)")
    run.add_argument("--types", default=None,
                     help="GoodAI config names, comma-separated (default: the six types GoodAI "
                          "scores without an LLM)")
    run.add_argument("--run-name", default=None, help="GoodAI run name (default memlab-<cond>)")
    run.add_argument("--home", default=None,
                     help="installed checkout and venv (default: <MEMLAB_CACHE_DIR>/goodai); "
                          "a new or empty folder, or one memlab made: memlab deletes only what "
                          "it created")
    run.add_argument("--server", default=None,
                     help="URL of a running memlab serve (default: start one for this run)")
    run.add_argument("--workdir", default=None,
                     help="the started server's sessions (default results/goodai/<run name>)")
    run.add_argument("--max-tokens", type=positive_int, default=None,
                     help="reply limit of the agent's turns (default: the agent's 128)")
    run.add_argument("--isolated", action="store_true",
                     help="GoodAI's --isolated: tests one by one, the agent reset in between")
    run.add_argument("--goodai-scorers", choices=("current", "published"), default="current",
                     help="scorers of the re-score (default current)")
    add_model_options(run)
    return {"goodai-run": cmd_goodai_run}


def cmd_goodai_run(args: argparse.Namespace) -> int:
    from memlab.bench.goodai import format_rescore_report, goodai_rescore
    from memlab.config import get_settings
    from memlab.integrations import goodai

    run_name = args.run_name or f"memlab-{args.condition}"
    home = Path(args.home) if args.home else get_settings().cache_dir / "goodai"
    types = tuple(split(args.types) or goodai.RULE_ONLY_TYPES)
    goodai.read_definitions(args.definitions, run_name=run_name, types=types)  # before install
    checkout = goodai.install(args.goodai_src, home)
    config = goodai.prepare_run(checkout, args.definitions, run_name=run_name, types=types)
    session = {"condition": args.condition,
               **({"max_tokens": args.max_tokens} if args.max_tokens else {})}
    if args.server:
        goodai.run_goodai(checkout, config, args.server, isolated=args.isolated, session=session)
    else:
        serve = ["-c", args.condition, "--workdir",
                 args.workdir or str(Path("results") / "goodai" / run_name)]
        for flag, value in (("--llm", args.llm), ("--llm-model", args.llm_model),
                            ("--embedder", args.embedder)):
            serve += [flag, value] if value else []
        with goodai.ServerProcess(serve) as server:
            goodai.run_goodai(checkout, config, server.url, isolated=args.isolated,
                              session=session)
    results = checkout.results(run_name, isolated=args.isolated)
    print(format_rescore_report(goodai_rescore(results, scorers=args.goodai_scorers)))
    print(f"GoodAI result files: {results}")
    return 0
