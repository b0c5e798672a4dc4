"""Run inside GoodAI's venv: score GoodAI result files with GoodAI's own evaluate_correct.

    <goodai venv python> goodai_score_probe.py CHECKOUT RESULTS OUT.json

Writes {"<agent>/<Test Type>/<file>": [score, max_score] | "gpt" | "callback" | "error ..."};
a call GoodAI would make to a GPT judge is refused and recorded as "gpt". Test support for
tests/test_goodai_runner.py (it needs GoodAI's checkout, so it cannot import memlab).
"""

import json
import sys
import types
from pathlib import Path

checkout, results, out = sys.argv[1:4]
sys.path.insert(0, checkout)
stub = types.ModuleType("transformers")  # only Hugging Face agents use it
stub.AutoTokenizer = object
sys.modules["transformers"] = stub


class NeedsGPT(Exception):
    pass


def refuse(*_args, **_kwargs):
    raise NeedsGPT()


import dataset_interfaces.interface as interface  # noqa: E402
from dataset_interfaces.factory import DATASETS_BY_NAME  # noqa: E402

interface.ask_llm = refuse
interface.DatasetInterface.ask_llm = refuse
interface.DatasetInterface.evaluate_correct_gpt = refuse
scores = {}
for path in sorted(Path(results).glob("*/*/*_*.json")):
    dataset = DATASETS_BY_NAME.get(path.parent.name)
    key = str(path.relative_to(results))
    if dataset is None:
        continue
    if path.parent.name == "Prospective Memory":
        scores[key] = "callback"  # scored while the run goes on, from the master log
        continue
    result = json.loads(path.read_text())
    try:
        score, max_score, _ = dataset().evaluate_correct(
            [""] * len(result["actual_responses"]), result["actual_responses"],
            result["expected_responses"])
        scores[key] = [score, max_score]
    except NeedsGPT:
        scores[key] = "gpt"
    except Exception as exc:  # GoodAI's own scorer failed on this answer
        scores[key] = f"error {exc!r}"
Path(out).write_text(json.dumps(scores, indent=1))
