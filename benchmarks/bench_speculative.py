"""Would speculative decoding by prompt lookup speed up the peers' memory calls on this CPU?

A peer's stored turn is mostly decoding: LangMem writes 128-190 completion tokens a call as
grammar-constrained JSON that copies the user's words. Prompt-lookup decoding (llama-cpp-python's
``LlamaPromptLookupDecoding``) drafts the next tokens from n-grams of the prompt and checks them in
one batch, which should suit such copying. This measures decoding alone (the prompt is evaluated
first) of one such call, plain and with 2, 4 and 10 drafted tokens, at ``--threads`` threads, each
in a fresh model, and whether the text is the same.

Usage:
    python benchmarks/bench_speculative.py [--size 1.5b] [--threads 1] [--drafts 2,4,10]
Writes ``benchmarks/results/speculative.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_llm import machine  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "speculative.json"
MAX_TOKENS = 200
CONVERSATION = """\
user: I'm thinking about rearranging my living room. I also want to make sure the sofa faces \
the window, because the morning light is what I love most about the flat.
assistant: That sounds lovely; facing the light can change the whole room.
user: My sister Clara is visiting from Lisbon on the 14th, and she is allergic to cats, so I \
need to ask the neighbour to keep Whiskers at her place that weekend.
assistant: Good idea to plan ahead for Clara's allergy."""
EXISTING = [
    {"id": "3f2a9c1e7b8d4e6fa1b2c3d4e5f60718",
     "content": "User prefers tea over coffee in the mornings."},
    {"id": "9a8b7c6d5e4f30211a2b3c4d5e6f7081",
     "content": "User is learning to play the cello and practises on Tuesdays."},
]
MESSAGES = [
    {"role": "system", "content": (
        "You are a memory manager. Extract every fact about the user from the conversation as "
        "new memories, and patch existing memories that the conversation updates. Reply with "
        'JSON: {"tool_calls": [{"name": "Memory", "arguments": {"content": "..."}}, ...]}. '
        "Copy the user's own words where you can.")},
    {"role": "user", "content": f"Existing memories:\n{json.dumps(EXISTING)}\n\n"
                                f"Conversation:\n{CONVERSATION}\n\nUpdate the memories."},
]
SCHEMA = {
    "type": "object", "required": ["tool_calls"],
    "properties": {"tool_calls": {"type": "array", "maxItems": 8, "items": {
        "type": "object", "required": ["name", "arguments"],
        "properties": {
            "name": {"type": "string", "enum": ["Memory", "PatchDoc"]},
            "arguments": {"type": "object", "required": ["content"],
                          "properties": {"content": {"type": "string", "maxLength": 480}}}}}}},
}


def measure(size: str, threads: int, draft: int | None) -> dict:
    """Decode the memory call once with a fresh model (``draft`` tokens drafted, None: plain)."""
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

    from memlab.config import get_settings
    from memlab.llm.grammars import grammar_for
    from memlab.llm.local import resolve_model_path

    settings = get_settings(llm_cache=False)
    path, name, _ = resolve_model_path(settings, size, None)
    extra = {} if draft is None else {"draft_model": LlamaPromptLookupDecoding(num_pred_tokens=draft)}
    llama = llama_cpp.Llama(model_path=str(path), n_ctx=4096, n_threads=threads,
                            n_threads_batch=threads, seed=0, verbose=False, **extra)
    template = llama_cpp.llama_chat_format.Jinja2ChatFormatter(
        llama.metadata["tokenizer.chat_template"], eos_token="<|im_end|>", bos_token="")
    tokens = llama.tokenize(template(messages=MESSAGES).prompt.encode(), add_bos=False,
                            special=True)
    llama.eval(tokens)  # the prompt first: what is timed is decoding
    start = time.perf_counter()
    out = llama.create_completion(prompt=tokens, max_tokens=MAX_TOKENS, temperature=0.0, seed=0,
                                  grammar=grammar_for(SCHEMA, None))
    seconds = time.perf_counter() - start
    generated = out["usage"]["completion_tokens"]
    return {"model": name, "threads": threads, "drafted_tokens": draft,
            "prompt_tokens": len(tokens), "completion_tokens": generated,
            "seconds": round(seconds, 2), "tokens_per_s": round(generated / seconds, 2),
            "text": out["choices"][0]["text"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1.5b", help="packaged tier")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--drafts", default="2,4,10", help="comma-separated drafted-token counts")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    info = machine()
    rows = [measure(args.size, args.threads, draft)
            for draft in [None, *(int(d) for d in args.drafts.split(","))]]
    for row in rows:
        row["same_text_as_plain"] = row["text"] == rows[0]["text"]
        print(f"drafted {row['drafted_tokens']}: {row['tokens_per_s']} tokens/s "
              f"({row['completion_tokens']} in {row['seconds']} s), "
              f"same text as plain: {row['same_text_as_plain']}")
    report = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": info, "results": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
