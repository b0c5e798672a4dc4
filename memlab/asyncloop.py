"""A private event loop on a thread of its own, for async libraries behind memlab's sync
interfaces (a MemorySystem's ``observe`` and ``recall`` are plain calls)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """One event loop running on a daemon thread; ``run`` hands it a coroutine and waits.

    Args:
        name: the thread's name (seen in thread dumps).
    """

    def __init__(self, name: str = "memlab-loop"):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """The coroutine's result (its exception re-raised here), run on the loop's thread.

        Raises:
            TimeoutError: it ran past ``timeout`` seconds. It is cancelled, and this waits
                (up to ``timeout`` again) until it has stopped: a coroutine that blocks its
                loop (a local model call) stops at its next await, and until then nothing
                handed to the loop after it may run beside it (its writes would land
                between the next coroutine's, in an order a replay cannot repeat).
        """
        ended = threading.Event()

        async def tracked() -> T:
            try:
                return await coroutine
            finally:
                ended.set()

        future = asyncio.run_coroutine_threadsafe(tracked(), self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            ended.wait(timeout)
            raise

    def close(self, timeout: float = 10.0) -> None:
        """Cancel what is still pending, stop the loop and join its thread."""
        if not self.thread.is_alive():
            return

        async def _cancel_pending() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        try:
            self.run(_cancel_pending(), timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
            if not self.thread.is_alive():
                self.loop.close()
