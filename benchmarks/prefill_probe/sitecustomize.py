"""Counts the tokens llama.cpp evaluates, per model file, for benchmarks/bench_prefill.py.

Put this folder first on PYTHONPATH and name a JSON file in MEMLAB_PREFILL_PROBE: every
``llama_cpp.Llama.eval`` call (prompt and generated tokens alike) adds its tokens to the count of
its model, written to that file when the process ends with the path of the memlab imported. The same instrument measures any memlab
version, so a before/after comparison does not rest on the accounting it tests.
"""

import atexit
import json
import os

_PATH = os.environ.get("MEMLAB_PREFILL_PROBE")

if _PATH:
    import llama_cpp

    _COUNTS: dict[str, dict[str, int]] = {}
    _eval = llama_cpp.Llama.eval

    def _counted_eval(self, tokens):
        row = _COUNTS.setdefault(os.path.basename(self.model_path), {"evals": 0, "tokens": 0})
        row["evals"] += 1
        row["tokens"] += len(tokens)
        return _eval(self, tokens)

    llama_cpp.Llama.eval = _counted_eval

    @atexit.register
    def _write() -> None:
        import sys

        memlab = sys.modules.get("memlab")  # which tree ran: the benchmark checks it
        with open(_PATH, "w", encoding="utf-8") as out:
            json.dump({**_COUNTS, "memlab": getattr(memlab, "__file__", "")}, out)
