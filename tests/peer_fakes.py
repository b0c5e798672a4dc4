"""Scripted replies for the peer libraries' prompts (unit tests only).

Each reply is computed from the prompt (the exchange the library was given), so a test fails
when the library is not handed the exchange, and a replayed prompt gets the same reply.
"""

from __future__ import annotations

import json
import re

from memlab.llm.base import Message
from memlab.llm.fake import FakeLLM

HUMAN = re.compile(r"Human Message =+\s*\n\s*\n(.*?)\n\s*\n=+ Ai Message", re.S)


def mem0_user_text(messages: list[Message]) -> str:
    """The user line of the new messages in mem0's extraction prompt ("" when none)."""
    prompt = messages[-1].content
    new = prompt.split("## New Messages", 1)[-1].split("## Observation Date", 1)[0]
    found = re.search(r"user: (.*)", new)
    return found.group(1).strip() if found else ""


def mem0_reply(messages: list[Message]) -> str:
    said = mem0_user_text(messages)
    memories = [{"id": "0", "text": f"User said: {said}"}] if said else []
    return json.dumps({"memory": memories})


def langmem_reply(messages: list[Message]) -> str:
    found = HUMAN.findall("\n".join(m.content for m in messages))
    said = found[-1].strip() if found else ""
    return json.dumps({"tool_calls": [{"name": "Memory",
                                       "arguments": {"content": f"User said: {said}"}}]})


def peer_reply(messages: list[Message]) -> str:
    """mem0's or LangMem's memory reply, else a short answer (MCQ questions get "A")."""
    if any("## New Messages" in m.content for m in messages):
        return mem0_reply(messages)
    if any("You can call these tools" in m.content for m in messages):
        return langmem_reply(messages)
    return "A" if "Answer with the letter" in messages[-1].content else "Noted."


def peer_llm() -> FakeLLM:
    return FakeLLM([peer_reply])
