"""Shared pytest fixtures. Keep them small and grouped by concern; areas append their own below.

Service fixtures start a throwaway server once per test session, on first use only
(see tests/services.py); tests that stop a server make their own instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lets test modules `from services import ...`

from services import ChromaServer, PostgresServer, RedisServer, require_or_skip  # noqa: E402

# --- services (area 3) ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server for the whole session; yields the RedisServer (``.url``)."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL cluster for the whole session; yields the PostgresServer (``.url``)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def chroma_server():
    """A ``chroma run`` server for the whole session; yields the ChromaServer (``.url``)."""
    with ChromaServer() as server:
        yield server


# --- embedders (area 3) -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def minilm():
    """The real offline MiniLM embedder, loaded once per session."""
    from memlab.embed.minilm import MiniLMEmbedder
    from memlab.errors import MissingDependencyError

    try:
        return MiniLMEmbedder()
    except MissingDependencyError as exc:
        require_or_skip(str(exc))


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A user's working folder (the cwd), with memlab's response cache elsewhere."""
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def hashing_embedder():
    """The deterministic hashing embedder (unit tests only)."""
    from memlab.embed.hashing import HashingEmbedder

    return HashingEmbedder()
