"""Operating memory (seed 000, DD-01/DD-03) over any :class:`KeyValueStore`.

Keys are the seed's: ``personal_state:{agent_id}``, ``shared_state:{event_id}`` and
``full_history:{conversation_id}``. Objects are stored as JSON strings; ``last_updated`` is set on
every write. A workspace that reaches a terminal status (resolved, cancelled) is handed to the
archiving hook and removed only after the hook succeeded.
"""

from __future__ import annotations

from collections.abc import Callable

from memlab.config import Settings, get_settings
from memlab.errors import StoreError
from memlab.models.operating import PersonalMemoryState, SharedWorkspaceState
from memlab.models.turns import ConversationHistoryLog
from memlab.stores.base import KV_STORES, KeyValueStore

REDIS_PREFIX = "memlab:"  # a run's keys on Redis: memlab:<run namespace>:<key>

ArchiveHook = Callable[[SharedWorkspaceState], None]
WorkspaceFn = Callable[[SharedWorkspaceState], SharedWorkspaceState | None]

PERSONAL, SHARED, HISTORY = "personal_state:", "shared_state:", "full_history:"


class ArchiveError(StoreError):
    """The archiving hook failed; the workspace stays in operating memory."""


class OperatingMemory:
    """Typed access to operating memory.

    Args:
        kv: the backend (``InProcessKV`` or ``RedisKV``).
        archive_hook: called with a workspace that reached a terminal status, before it is
            removed; may be registered later with :meth:`set_archive_hook`.
    """

    def __init__(self, kv: KeyValueStore, archive_hook: ArchiveHook | None = None):
        self.kv = kv
        self.archive_hook = archive_hook

    @classmethod
    def from_url(cls, redis_url: str | None = None, *, namespace: str = "",
                 **kwargs) -> OperatingMemory:
        """Redis when ``redis_url`` (``MEMLAB_REDIS_URL``) is given, else in-process.

        Args:
            namespace: the run whose memory this is; on Redis every key is prefixed with
                ``memlab:{namespace}:`` (the in-process store belongs to one memory anyway).
        """
        if not redis_url:
            return cls(KV_STORES.create("memory"), **kwargs)
        prefix = f"{REDIS_PREFIX}{namespace}:" if namespace else ""
        return cls(KV_STORES.create("redis", url=redis_url, namespace=prefix), **kwargs)

    @classmethod
    def from_settings(cls, settings: Settings | None = None, **kwargs) -> OperatingMemory:
        """Backend from settings: Redis when ``MEMLAB_REDIS_URL`` is set, else in-process."""
        return cls.from_url((settings or get_settings()).redis_url, **kwargs)

    def clear(self) -> int:
        """Delete every key of this operating memory (on Redis: its namespace's)."""
        return self.kv.clear()

    def set_archive_hook(self, hook: ArchiveHook | None) -> None:
        self.archive_hook = hook

    # PersonalMemoryState -------------------------------------------------------------------
    def get_personal_state(self, agent_id: str) -> PersonalMemoryState | None:
        raw = self.kv.get(PERSONAL + agent_id)
        return None if raw is None else PersonalMemoryState.model_validate_json(raw)

    def save_personal_state(self, state: PersonalMemoryState) -> PersonalMemoryState:
        """Write the state (sets ``last_updated``) and return it."""
        self.kv.set(state.storage_key, state.touch().model_dump_json())
        return state

    def delete_personal_state(self, agent_id: str) -> bool:
        return self.kv.delete(PERSONAL + agent_id)

    # SharedWorkspaceState ------------------------------------------------------------------
    def get_workspace(self, event_id: str) -> SharedWorkspaceState | None:
        raw = self.kv.get(SHARED + event_id)
        return None if raw is None else SharedWorkspaceState.model_validate_json(raw)

    def list_workspaces(self) -> list[str]:
        """Event ids of the workspaces currently in operating memory."""
        return [k[len(SHARED) :] for k in self.kv.keys(SHARED)]

    def save_workspace(self, workspace: SharedWorkspaceState) -> SharedWorkspaceState:
        """Write the workspace (overwriting); archives it if its status is terminal."""
        self.kv.set(workspace.storage_key, workspace.touch().model_dump_json())
        if workspace.is_terminal:
            self.archive_workspace(workspace.event_id)
        return workspace

    def update_workspace(self, event_id: str, fn: WorkspaceFn) -> SharedWorkspaceState:
        """Atomically apply ``fn`` to the stored workspace; concurrent updates are never lost.

        ``fn`` gets a fresh copy, may mutate and/or return it, and may run more than once when
        writers race, so it must not have other side effects. A terminal result is archived.

        Raises:
            StoreError: no workspace ``event_id`` in operating memory.
            ArchiveError: the result is terminal and the archiving hook failed.
        """

        def apply(raw: str | None) -> str:
            if raw is None:
                raise StoreError(f"shared_state:{event_id}: no such workspace in operating memory")
            current = SharedWorkspaceState.model_validate_json(raw)
            result = fn(current)
            return (current if result is None else result).touch().model_dump_json()

        written = SharedWorkspaceState.model_validate_json(self.kv.update(SHARED + event_id, apply))
        if written.is_terminal:
            self.archive_workspace(event_id)
        return written

    def archive_workspace(self, event_id: str) -> bool:
        """Hand a terminal workspace to the hook, then remove it; False if it is not there.

        Raises:
            ArchiveError: no hook is registered or the hook raised; the workspace is kept.
        """
        raw = self.kv.get(SHARED + event_id)
        if raw is None:
            return False
        workspace = SharedWorkspaceState.model_validate_json(raw)
        if not workspace.is_terminal:
            raise StoreError(
                f"shared_state:{event_id}: status must be resolved or cancelled "
                f"to archive, got {workspace.status.value!r}"
            )
        if self.archive_hook is None:
            raise ArchiveError(f"shared_state:{event_id}: no archive hook registered; kept")
        try:
            self.archive_hook(workspace)
        except Exception as exc:
            raise ArchiveError(
                f"shared_state:{event_id}: archive hook failed, kept: {exc}"
            ) from exc
        # Delete only what was archived: a concurrent rewrite in between is kept.
        self.kv.update(SHARED + event_id, lambda now: None if now == raw else now)
        return True

    # ConversationHistoryLog ----------------------------------------------------------------
    def append_turn(self, conversation_id: str, user: str, assistant: str) -> None:
        """Atomically append one ``User: ...\\nAI: ...`` exchange to the conversation log."""
        self.kv.append(HISTORY + conversation_id, f"User: {user}\nAI: {assistant}", "\n")

    def get_history(self, conversation_id: str) -> ConversationHistoryLog:
        raw = self.kv.get(HISTORY + conversation_id) or ""
        return ConversationHistoryLog(conversation_id=conversation_id, raw_text=raw)

    def save_history(self, log: ConversationHistoryLog) -> None:
        self.kv.set(log.storage_key, log.raw_text)

    def delete_history(self, conversation_id: str) -> bool:
        return self.kv.delete(HISTORY + conversation_id)

    def close(self) -> None:
        self.kv.close()
