"""LocalLLM: a GGUF model run in-process on CPU by llama-cpp-python, no network.

The default is Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) from its pinned weights packages; ``size``
picks another packaged tier and ``model_path`` (``MEMLAB_LOCAL_MODEL``) runs any GGUF file.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memlab.config import Settings, get_settings
from memlab.errors import ConfigError, LLMError, MissingDependencyError
from memlab.llm.base import Completion, LLMClient, Message, as_messages, ends_in_loop
from memlab.llm.checkpoint import DiskStates
from memlab.llm.grammars import grammar_for, grammar_version
from memlab.llm.jsoncut import FieldsStop, RepeatStop
from memlab.llm.prefix import PrefixStates, common_prefix
from memlab.llm.sampling import greedy_first
from memlab.llm.weights import ensure_model_file, packaged_model

# Used when a user's GGUF carries no chat template.
CHATML_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# flash attention measured per packaged model (PLATFORM.md: helps the 0.5B, hurts the 1.5B)
FLASH_ATTN = {"0.5b": True, "1.5b": False, "135m": False}


@dataclass
class LoadedModel:
    """One Llama object shared by every LocalLLM of this process that asks for it."""

    llama: Any
    lock: threading.RLock
    formatter: Any  # the model's chat template, ready to render
    eos_text: str
    load_s: float
    prefixes: PrefixStates | None = None  # parked prompt prefixes (None: only the live one)
    checkpoints: DiskStates | None = None  # long reads kept on disk (None: none)

    def prepare(self, tokens: list[int]) -> int:
        """Set up the live state for ``tokens`` (call under ``lock``); the tokens reused."""
        if self.prefixes is not None:
            reused = self.prefixes.prepare(self.llama, tokens)
        else:
            live = common_prefix(self.llama.input_ids[: self.llama.n_tokens], tokens)
            reused = max(0, min(live, len(tokens) - 1))
        if self.checkpoints is not None:
            reused = self.checkpoints.prepare(self.llama, tokens, reused)
        return reused


_LOADED: dict[tuple[int, str, int, bool], LoadedModel] = {}  # keyed by pid: never across fork
_LOADED_LOCK = threading.Lock()


@atexit.register
def close_loaded_models() -> None:
    """Free this process's loaded models while the interpreter is whole: left to llama.cpp's
    own ``__del__`` at shutdown, each printed a "TypeError: 'NoneType' object is not callable"
    traceback after its module's globals were gone (a forked worker leaves its parent's)."""
    with _LOADED_LOCK:
        for key in [k for k in _LOADED if k[0] == os.getpid()]:
            _LOADED.pop(key).llama.close()


def _import_llama_cpp():
    try:
        import llama_cpp
    except ImportError:
        raise MissingDependencyError(
            "the local LLM needs llama-cpp-python; run: pip install llama-cpp-python==0.3.36 "
            "(compiles for several minutes; CMAKE_ARGS=\"-DLLAVA_BUILD=OFF\" makes it faster)"
        ) from None
    return llama_cpp


def load_model(path: Path, n_ctx: int, *, n_threads: int | None = None,
               flash_attn: bool = False, seed: int = 0, prefix_cache_mb: int = 0,
               checkpoint_dir: Path | None = None, checkpoint_mb: int = 0) -> LoadedModel:
    """The process-wide Llama for ``(path, n_ctx, flash_attn)``, loading it on first use;
    long reads checkpointed under ``checkpoint_dir`` (``memlab.llm.checkpoint``) when
    ``checkpoint_mb`` > 0."""
    key = (os.getpid(), str(path), n_ctx, flash_attn)
    with _LOADED_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        llama_cpp = _import_llama_cpp()
        start = time.perf_counter()
        try:
            # n_threads_batch defaults to every core; with several worker processes that
            # oversubscribes the cores and prompt processing slows ~4x, so both follow n_threads.
            llama = llama_cpp.Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads,
                                    n_threads_batch=n_threads, seed=seed, flash_attn=flash_attn, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise LLMError(f"llama.cpp could not load {path}: {exc}") from exc
        model = _describe(llama, time.perf_counter() - start)
        if prefix_cache_mb > 0:
            model.prefixes = PrefixStates(prefix_cache_mb * 2**20)
        if checkpoint_dir is not None and checkpoint_mb > 0:
            folder = f"{path.stem}-{path.stat().st_size}-ctx{n_ctx}{'-fa' if flash_attn else ''}"
            model.checkpoints = DiskStates(Path(checkpoint_dir) / folder, checkpoint_mb * 2**20)
        _LOADED[key] = model
        return model


def _describe(llama: Any, load_s: float) -> LoadedModel:
    def text(token: int) -> str:
        return llama.detokenize([token], special=True).decode("utf-8", "ignore") if token >= 0 else ""

    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llama.metadata.get("tokenizer.chat_template") or CHATML_TEMPLATE
    eos_text = text(llama.token_eos())
    formatter = Jinja2ChatFormatter(template, eos_token=eos_text,
                                    bos_token=text(llama.token_bos()))
    return LoadedModel(llama=llama, lock=threading.RLock(), formatter=formatter,
                       eos_text=eos_text, load_s=load_s)


def resolve_model_path(settings: Settings, size: str | None,
                       model_path: str | Path | None) -> tuple[Path, str, str | None]:
    """``(gguf path, model name, packaged size or None)`` from arguments and settings."""
    path = model_path or settings.local_model
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(f"local model (--llm-model or MEMLAB_LOCAL_MODEL): no GGUF file at "
                              f"{path}; give a packaged tier (0.5b, 1.5b, 135m) or a GGUF file")
        return path, path.name.removesuffix(".gguf"), None
    spec = packaged_model(size or settings.local_size)
    return ensure_model_file(spec, settings.cache_dir), spec.name, spec.size


class LocalLLM(LLMClient):
    """A GGUF chat model on CPU, deterministic at temperature 0.

    Args:
        size: packaged tier "0.5b" (default), "1.5b" or "135m"; default ``settings.local_size``.
        model_path: any GGUF file (overrides ``size``); default ``settings.local_model``.
        n_ctx: context window in tokens; default ``settings.n_ctx``.
        n_threads: CPU threads; default ``settings.n_threads`` (llama.cpp picks when None).
        flash_attn: default as measured per packaged model, off for other files.
        seed: sampling seed (used when temperature > 0).
        settings: memlab settings; read from the environment when None.
    """

    provider = "local"
    supports_logprobs = True

    def __init__(self, size: str | None = None, model_path: str | Path | None = None, *,
                 n_ctx: int | None = None, n_threads: int | None = None,
                 flash_attn: bool | None = None, seed: int = 0,
                 settings: Settings | None = None, **_: Any):
        super().__init__()
        settings = settings or get_settings()
        path, self.model, packaged = resolve_model_path(settings, size, model_path)
        self.model_path = path
        self.context_window = n_ctx or settings.n_ctx
        self.seed = seed
        if flash_attn is None:
            flash_attn = FLASH_ATTN.get(packaged or "", False)
        self.flash_attn = flash_attn
        # every core for generation too (llama-cpp-python's default is half of them); a grid
        # of several workers sets MEMLAB_N_THREADS to share the cores instead
        threads = n_threads or settings.n_threads or os.cpu_count() or 1
        self._loaded = load_model(path, self.context_window, flash_attn=flash_attn, seed=seed,
                                  n_threads=threads, prefix_cache_mb=settings.prefix_cache_mb,
                                  checkpoint_dir=settings.cache_dir / "kv",
                                  checkpoint_mb=settings.kv_checkpoint_mb)

    @property
    def llama(self) -> Any:
        return self._loaded.llama

    @property
    def load_s(self) -> float:
        return self._loaded.load_s

    def render(self, messages: list[Message]) -> str:
        """The prompt text the model sees, through its own chat template."""
        formatter = self._loaded.formatter
        return formatter(messages=[m.model_dump() for m in as_messages(messages)]).prompt

    def _prompt_tokens(self, messages: list[Message]) -> list[int]:
        return self.llama.tokenize(self.render(messages).encode("utf-8"), add_bos=False,
                                   special=True)

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_message_tokens(self, messages: list[Message]) -> int:
        """Tokens of the whole rendered chat prompt, template included."""
        return len(self._prompt_tokens(as_messages(messages)))

    def cache_identity(self, params: dict[str, Any]) -> dict[str, Any]:
        """A constrained call's answer also depends on how its grammar is built."""
        constrained = params.get("json_schema") is not None or params.get("choices")
        newlines = bool(params.get("json_newlines"))
        return {"grammar": grammar_version(newlines=newlines)} if constrained else {}

    def _complete(self, messages: list[Message], **params: Any) -> Completion:
        tokens = self._prompt_tokens(messages)
        max_tokens = params["max_tokens"]
        if len(tokens) + max_tokens > self.context_window:
            raise LLMError(
                f"prompt of {len(tokens)} tokens + max_tokens {max_tokens} exceeds the "
                f"context window of {self.context_window} tokens ({self.model})")
        stop = [s for s in [*(params.get("stop") or []), self._loaded.eos_text] if s]
        grammar = grammar_for(params.get("json_schema"), params.get("choices"),
                              newlines=bool(params.get("json_newlines")))
        loop = LoopStop(len(tokens)) if params.get("stop_on_loop") else None
        fields = (FieldsStop(self.llama.detokenize, len(tokens), params["json_fields"])
                  if params.get("json_fields") else None)
        repeats = (RepeatStop(self.llama.detokenize, len(tokens))
                   if params.get("json_repeats") else None)
        stops = [c for c in (loop, fields, repeats) if c]
        criteria = _import_llama_cpp().StoppingCriteriaList(stops) if stops else None
        with self._loaded.lock, greedy_first(self.llama):
            reused = self._loaded.prepare(tokens)
            try:
                out = self.llama.create_completion(
                    prompt=tokens, max_tokens=max_tokens, temperature=params["temperature"],
                    stop=stop, grammar=grammar, seed=self.seed, stopping_criteria=criteria)
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"local model {self.model} failed: {exc}") from exc
        usage = out["usage"]
        return Completion(text=out["choices"][0]["text"], prompt_tokens=usage["prompt_tokens"],
                          completion_tokens=usage["completion_tokens"], latency_s=0.0,
                          model=self.model, provider=self.provider,
                          looped=bool(loop and loop.fired), prompt_tokens_reused=reused)

    def _score_options(self, messages: list[Message], options: list[str]) -> list[float]:
        """Mean log-probability per token of each option (plus end-of-turn) as the reply."""
        prompt = self._prompt_tokens(messages)
        eos = self.llama.token_eos()
        continuations = [self.llama.tokenize(o.encode("utf-8"), add_bos=False, special=False)
                         + [eos] for o in options]
        longest = max((len(c) for c in continuations), default=0)
        if len(prompt) + longest > self.context_window:
            raise LLMError(f"prompt of {len(prompt)} tokens + the longest option exceeds the "
                           f"context window of {self.context_window} tokens ({self.model})")
        with self._loaded.lock:
            self._loaded.prepare(prompt)
            try:
                first = self._eval_prompt(prompt)
                return [self._option_logprob(len(prompt), first, c) for c in continuations]
            finally:
                self._rewind(len(prompt))

    def _eval_prompt(self, prompt: list[int]) -> np.ndarray:
        """Evaluate ``prompt`` (reusing a cached prefix); return the next-token logits."""
        llama = self.llama
        cached = llama.input_ids[: llama.n_tokens]
        common = 0
        for a, b in zip(cached, prompt, strict=False):
            if a != b:
                break
            common += 1
        llama.n_tokens = min(common, len(prompt) - 1)  # at least one token refreshes logits
        llama.eval(prompt[llama.n_tokens:])
        return np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1),
                                     shape=(llama.n_vocab(),)).astype(np.float64)

    def _option_logprob(self, n_prompt: int, first: np.ndarray, tokens: list[int]) -> float:
        llama = self.llama
        self._rewind(n_prompt)
        rows = [first]
        n_batch = llama.n_batch
        for start in range(0, len(tokens) - 1, n_batch):  # last token's own logits are unused
            chunk = tokens[start: min(len(tokens) - 1, start + n_batch)]
            llama._batch.set_batch(chunk, n_past=n_prompt + start, logits_all=True)
            llama._ctx.decode(llama._batch)
            logits = np.ctypeslib.as_array(llama._ctx.get_logits(),
                                           shape=(len(chunk), llama.n_vocab()))
            rows.extend(logits.astype(np.float64))
        total = 0.0
        for row, token in zip(rows, tokens, strict=True):
            peak = row.max()
            total += row[token] - peak - np.log(np.exp(row - peak).sum())
        return float(total / len(tokens))

    def _rewind(self, n_tokens: int) -> None:
        """Forget evaluated tokens past ``n_tokens`` so the next call re-evaluates cleanly."""
        llama = self.llama
        llama.n_tokens = n_tokens
        llama._ctx.kv_cache_seq_rm(-1, n_tokens, -1)
        llama._requires_eval = True  # the logits in the context no longer follow the prompt


class LoopStop:
    """A llama-cpp stopping criterion: true once the reply (the tokens after the first
    ``n_prompt``) ends in a loop (``ends_in_loop``); ``fired`` says whether it stopped one."""

    def __init__(self, n_prompt: int):
        self.n_prompt, self.fired = n_prompt, False

    def __call__(self, input_ids: np.ndarray, logits: np.ndarray) -> bool:
        self.fired = self.fired or ends_in_loop(input_ids[self.n_prompt:])
        return self.fired
