"""Document QA on the real local model and MiniLM over the shipped sample document."""

from __future__ import annotations

from pathlib import Path

import pytest
from services import require_or_skip

from memlab.docqa import DocumentQA
from memlab.errors import MissingDependencyError
from memlab.llm import get_llm
from memlab.models.retrieval import QueryStatus
from memlab.stores.vector import ChromaVectorStore

pytestmark = pytest.mark.integration

SAMPLE = Path(__file__).parent.parent / "data" / "docqa"


def test_real_model_answers_with_the_balance_page_cited(tmp_path, minilm):
    try:
        llm = get_llm("local", local_size="0.5b", llm_cache=False, n_ctx=2048)
    except MissingDependencyError as exc:
        require_or_skip(str(exc))
    store = ChromaVectorStore("sample-book", minilm, path=tmp_path / "chroma", namespace="docqa")
    qa = DocumentQA(llm, store, k=2, max_tokens=48)
    qa.ingest(SAMPLE)
    result = qa.ask("Which sensors does a humanoid robot fuse to keep its balance?")
    assert result.query.status is QueryStatus.COMPLETED, result.error
    top = result.response.retrieved_chunks[0]
    assert top.page_number == 2 and "inertial measurement unit" in top.content
    assert top.similarity_score > result.response.retrieved_chunks[-1].similarity_score - 1e-9
    assert any("page 2" in s for s in result.response.sources)
    assert len(result.response.content) >= 10
