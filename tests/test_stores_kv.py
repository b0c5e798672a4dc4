"""Operating memory contract: every KeyValueStore backend (in-process, Redis) passes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta

import pytest
from services import RedisServer

from memlab.errors import ConfigError, StoreError, StoreUnavailableError
from memlab.models.operating import EventStatus, PersonalMemoryState, SharedWorkspaceState
from memlab.models.turns import ConversationHistoryLog
from memlab.stores.base import KV_STORES
from memlab.stores.kv import InProcessKV, RedisKV, redact_url
from memlab.stores.operating import ArchiveError, OperatingMemory


@pytest.fixture(params=["memory", "redis"])
def kv(request):
    if request.param == "memory":
        store = InProcessKV()
    else:
        server = request.getfixturevalue("redis_server")
        store = RedisKV(server.url, namespace=f"t{time.monotonic_ns()}:")
    yield store
    store.close()


@pytest.fixture
def om(kv):
    return OperatingMemory(kv)


# --- raw key-value contract -------------------------------------------------------------------


def test_get_set_delete_keys(kv):
    assert kv.get("a") is None
    kv.set("a:1", "x")
    kv.set("a:2", "y")
    kv.set("b:1", "z")
    assert kv.get("a:1") == "x"
    assert kv.keys("a:") == ["a:1", "a:2"]
    assert kv.delete("a:1") is True and kv.delete("a:1") is False
    assert kv.keys("a:") == ["a:2"]


def test_non_string_value_is_rejected(kv):
    with pytest.raises(ConfigError, match="must be str"):
        kv.set("k", 3)  # type: ignore[arg-type]


def test_append_uses_separator_only_between_parts(kv):
    kv.append("log", "one", "\n")
    kv.append("log", "two", "\n")
    assert kv.get("log") == "one\ntwo"


def test_update_can_create_modify_and_delete(kv):
    assert kv.update("n", lambda v: str(int(v or 0) + 1)) == "1"
    assert kv.update("n", lambda v: str(int(v) + 1)) == "2"
    assert kv.update("n", lambda v: None) is None
    assert kv.get("n") is None


def test_update_error_in_fn_writes_nothing(kv):
    kv.set("n", "5")
    with pytest.raises(ZeroDivisionError):
        kv.update("n", lambda v: str(1 / 0))
    assert kv.get("n") == "5"


def test_concurrent_thread_updates_are_not_lost(kv):
    def bump() -> None:
        for _ in range(50):
            kv.update("counter", lambda v: str(int(v or 0) + 1))

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert kv.get("counter") == "200"


def test_registry_names():
    assert KV_STORES.names() == ["memory", "redis"]


# --- operating memory API ---------------------------------------------------------------------


def test_personal_state_roundtrip_sets_last_updated(om):
    state = PersonalMemoryState(agent_id="planner_agent_001", scratchpad={"q": "x"})
    state.last_updated -= timedelta(hours=1)
    stale = state.last_updated
    om.save_personal_state(state)
    loaded = om.get_personal_state("planner_agent_001")
    assert loaded.scratchpad == {"q": "x"} and loaded.last_updated > stale
    assert om.kv.get("personal_state:planner_agent_001") is not None
    assert om.get_personal_state("nobody") is None


def test_workspace_update_is_applied_and_touched(om):
    ws = om.save_workspace(SharedWorkspaceState(status=EventStatus.ACTIVE))
    before = ws.last_updated

    def add(w: SharedWorkspaceState) -> None:
        w.shared_data = {**w.shared_data, "alert": "Vessel V-123 delayed"}
        w.add_participant("vessel_agent_123")

    out = om.update_workspace(ws.event_id, add)
    stored = om.get_workspace(ws.event_id)
    assert stored.shared_data == {"alert": "Vessel V-123 delayed"}
    assert stored.participating_agents == ["vessel_agent_123"]
    assert out.last_updated >= before and om.list_workspaces() == [ws.event_id]


def test_update_of_missing_workspace_raises(om):
    with pytest.raises(StoreError, match="no such workspace"):
        om.update_workspace("evt_missing", lambda w: w)


def test_resolving_archives_then_removes(om):
    archived: list[SharedWorkspaceState] = []
    om.set_archive_hook(archived.append)
    ws = om.save_workspace(SharedWorkspaceState(status="active", shared_data={"k": 1}))
    om.update_workspace(ws.event_id, lambda w: setattr(w, "status", EventStatus.RESOLVED))
    assert [a.event_id for a in archived] == [ws.event_id]
    assert archived[0].status is EventStatus.RESOLVED and archived[0].shared_data == {"k": 1}
    assert om.get_workspace(ws.event_id) is None


def test_failing_hook_keeps_workspace_and_raises(om):
    def broken(_: SharedWorkspaceState) -> None:
        raise RuntimeError("archive down")

    om.set_archive_hook(broken)
    ws = SharedWorkspaceState(status=EventStatus.CANCELLED)
    with pytest.raises(ArchiveError, match="archive down"):
        om.save_workspace(ws)
    assert om.get_workspace(ws.event_id).status is EventStatus.CANCELLED
    done: list[str] = []
    om.set_archive_hook(lambda w: done.append(w.event_id))
    assert om.archive_workspace(ws.event_id) is True
    assert done == [ws.event_id] and om.get_workspace(ws.event_id) is None


def test_terminal_without_hook_is_kept(om):
    ws = SharedWorkspaceState(status=EventStatus.RESOLVED)
    with pytest.raises(ArchiveError, match="no archive hook"):
        om.save_workspace(ws)
    assert om.get_workspace(ws.event_id) is not None


def test_history_append_matches_the_model_format(om):
    om.append_turn("c1", "Hi", "Hello!")
    om.append_turn("c1", "What is my name?", "Sam.")
    expected = ConversationHistoryLog(conversation_id="c1", raw_text="")
    expected.append_turn("Hi", "Hello!")
    expected.append_turn("What is my name?", "Sam.")
    assert om.get_history("c1").raw_text == expected.raw_text
    assert om.get_history("other").raw_text == ""


# --- Redis only: processes, faults ------------------------------------------------------------

_WORKER = textwrap.dedent("""
    import sys, time
    from memlab.stores.kv import RedisKV
    from memlab.stores.operating import OperatingMemory
    url, ns, event_id, start = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    om = OperatingMemory(RedisKV(url, namespace=ns))
    def bump(w):
        w.shared_data = {**w.shared_data, "count": w.shared_data.get("count", 0) + 1}
    while time.time() < start:
        time.sleep(0.005)
    for _ in range(100):
        om.update_workspace(event_id, bump)
""")


def test_eight_processes_times_100_increments_give_800(redis_server):
    ns = f"procs{time.monotonic_ns()}:"
    om = OperatingMemory(RedisKV(redis_server.url, namespace=ns))
    ws = om.save_workspace(SharedWorkspaceState(status="active", shared_data={"count": 0}))
    start = time.time() + 2.0  # all workers begin together, after their imports
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, redis_server.url, ns, ws.event_id, str(start)], env=env
        )
        for _ in range(8)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 8
    assert om.get_workspace(ws.event_id).shared_data["count"] == 800


def test_redis_down_gives_typed_error_naming_url_then_recovers():
    server = RedisServer().start()
    try:
        kv = RedisKV(server.url, timeout_s=1.0)
        kv.set("k", "v")
        server.stop()
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=f"127.0.0.1:{server.port}"):
            kv.get("k")
        with pytest.raises(StoreUnavailableError):
            OperatingMemory(kv).update_workspace("e", lambda w: w)
        assert time.monotonic() - began < 10
        server.start()
        kv.set("k", "again")
        assert kv.get("k") == "again"
    finally:
        server.cleanup()


def test_hung_redis_times_out_instead_of_hanging():
    server = RedisServer().start()
    try:
        kv = RedisKV(server.url, timeout_s=0.5)
        kv.set("k", "v")
        server.proc.send_signal(signal.SIGSTOP)  # accepts connections, never answers
        began = time.monotonic()
        with pytest.raises(StoreUnavailableError, match=server.url):
            kv.get("k")
        assert time.monotonic() - began < 5
        server.proc.send_signal(signal.SIGCONT)
        assert kv.get("k") == "v"
    finally:
        if server.proc is not None:
            server.proc.send_signal(signal.SIGCONT)
        server.cleanup()


def test_password_is_redacted_in_error_urls():
    assert redact_url("redis://user:s3cret@host:6379/0") == "redis://user:***@host:6379/0"
    assert redact_url("redis://host:6379/0") == "redis://host:6379/0"


def test_from_settings_picks_the_backend(redis_server):
    from memlab.config import get_settings

    assert isinstance(OperatingMemory.from_settings(get_settings()).kv, InProcessKV)
    om = OperatingMemory.from_settings(get_settings(redis_url=redis_server.url))
    assert isinstance(om.kv, RedisKV) and om.kv.ping()
