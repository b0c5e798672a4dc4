"""FakeLLMs that play every memory role, for memory tests (memlab's and a plugin's).

``memory_llm()`` recognises the extractor, compressor, schema and forget prompts by their opening
words and answers each from the text it was given (so the answers depend on the input and tests
can fail); ``peer_reply`` answers mem0's and LangMem's memory prompts the same way.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable

from memlab.llm.base import Message
from memlab.llm.fake import FakeLLM
from memlab.memory.base import Exchange

STOP = {"user", "the", "and", "that", "this", "with", "what", "your", "have", "about", "from",
        "very", "just", "okay", "sure", "noted", "thanks", "tell", "more", "really"}


def concepts(text: str, n: int = 4) -> list[str]:
    words = [w for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in STOP]
    return [w for w, _ in Counter(words).most_common(n)]


def _request(messages: list[Message]) -> str:
    """The first user message without the JSON instruction complete_json appends."""
    text = next(m.content for m in messages if m.role == "user")
    return text.split("\n\nReply with only a JSON")[0]


def _extract(messages: list[Message]) -> str:
    from memlab.memory.hybrid_extract import rule_based_candidates

    user, _, assistant = _request(messages).partition("\nAI: ")
    found = rule_based_candidates(Exchange(user=user.removeprefix("User: "),
                                           assistant=assistant, turn_number=0), 0.9)
    return json.dumps({"candidates": [c.model_dump(exclude={"extractor"}) for c in found]})


def _compress(messages: list[Message]) -> str:
    text = _request(messages)
    said = [ln.removeprefix("User: ") for ln in text.splitlines() if ln.startswith("User: ")]
    summary = "; ".join(said)[:400] or "nothing"
    return json.dumps({"summary": f"The user said: {summary}", "key_concepts": concepts(text),
                       "themes": concepts(text, 1), "relationships": [], "confidence": 0.8})


def _schema(messages: list[Message]) -> str:
    top = concepts(_request(messages), 2) or ["topic"]
    return json.dumps({"name": f"{' '.join(top)} pattern",
                       "description": f"Recurring conversations about {', '.join(top)}.",
                       "confidence": 0.7})


def _forget(messages: list[Message]) -> str:
    """yes when the fact shares a word of 4+ letters with the request (not the verb)."""
    request, _, fact = _request(messages).partition("\nFact: ")
    asked = set(concepts(request, 20)) - {"forget", "cancel", "clear", "every", "told"}
    return "yes" if asked & set(concepts(fact.split("\n")[0], 20)) else "no"


def role_of(messages: list[Message]) -> str:
    from memlab.memory.hybrid_extract import EXTRACT_PROMPT
    from memlab.memory.hybrid_forget import FORGET_PROMPT
    from memlab.sleep.compress import COMPRESS_PROMPT
    from memlab.sleep.induce import SCHEMA_PROMPT

    system = messages[0].content if messages and messages[0].role == "system" else ""
    for role, prompt in (("extract", EXTRACT_PROMPT), ("compress", COMPRESS_PROMPT),
                         ("schema", SCHEMA_PROMPT), ("forget", FORGET_PROMPT)):
        if system.startswith(prompt[:40]):
            return role
    return "answer"


def memory_llm(answer: str | Callable[[list[Message]], str] = "ok", *,
               broken: set[str] | frozenset[str] = frozenset(),
               context_window: int = 4096) -> FakeLLM:
    """A FakeLLM answering extraction, compression, schema and forget prompts; roles in ``broken``
    (read at call time, so a test may change the set between calls) get non-JSON garbage.
    ``answer`` is the reply to anything else, or a function of the messages giving it."""
    handlers = {"extract": _extract, "compress": _compress, "schema": _schema,
                "forget": _forget}

    def reply(messages: list[Message]) -> str:
        role = role_of(messages)
        if role in broken:
            return "Sorry, I cannot do that {not json"
        if role in handlers:
            return handlers[role](messages)
        return answer(messages) if callable(answer) else answer

    return FakeLLM([reply], context_window=context_window)


# ------------------------------------------------ the peer libraries' prompts (mem0, LangMem)
# Each reply is computed from the prompt (the exchange the library was given), so a test fails
# when the library is not handed the exchange, and a replayed prompt gets the same reply.
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


# graphiti's requests carry memlab's JSON instruction with its response model's schema
SCHEMA_NOTE = "matches this JSON schema:\n"
NAMED = re.compile(r"\b[A-Z][A-Za-z]{2,}\b")
NOT_NAMES = {"The", "This", "That", "Let", "Lets", "What", "Sure", "Noted", "And", "But"}


def _tagged(text: str, tag: str) -> str:
    """The text between ``<TAG>`` and ``</TAG>`` (spaces or underscores in the tag)."""
    pattern = tag.replace(" ", "[ _]")
    found = re.search(rf"<{pattern}>\s*\n(.*?)\n\s*</{pattern}>", text, re.S)
    return found.group(1).strip() if found else ""


def _fill(node: dict, defs: dict) -> object:
    """The smallest instance of a JSON schema: empty lists and strings, null where allowed."""
    node = defs.get(node.get("$ref", "").split("/")[-1], node)
    if "anyOf" in node:
        kinds = [option.get("type") for option in node["anyOf"]]
        return None if "null" in kinds else _fill(node["anyOf"][0], defs)
    kind = node.get("type")
    if kind == "object":
        return {k: _fill(v, defs) for k, v in node.get("properties", {}).items()}
    return {"array": [], "string": "", "integer": -1, "number": 0, "boolean": False}.get(kind)


def graphiti_reply(messages: list[Message]) -> str:
    """graphiti's structured replies, from its prompt: the entities are "user" and the user
    line's capitalised names (else its first content word), one fact links "user" to the first name and says the user's
    line, valid from the prompt's reference time; nothing is a duplicate."""
    text = "\n".join(m.content for m in messages)
    schema = json.loads(messages[-1].content.split(SCHEMA_NOTE, 1)[1])
    reply = _fill(schema, schema.get("$defs", {}))
    said = re.search(r"^user: (.*)$", _tagged(text, "CURRENT MESSAGE"), re.M)
    said = said.group(1).strip() if said else ""
    names = [w for w in dict.fromkeys(NAMED.findall(said)) if w not in NOT_NAMES]
    names = names or concepts(said, 1)  # "I like tea." has no name: its first content word
    when = re.search(r"<REFERENCE[ _]TIME>\s*\n\s*(\S+)", text)
    when = when.group(1) if when else None
    if "extracted_entities" in reply:
        reply["extracted_entities"] = [{"name": n, "entity_type_id": 0, "episode_indices": [0]}
                                       for n in ["user", *names]]
    elif "edges" in reply:
        listed = [n["name"] for n in json.loads(_tagged(text, "ENTITIES") or "[]")]
        targets = [n for n in listed if n != "user"]
        reply["edges"] = [{"source_entity_name": "user", "target_entity_name": targets[0],
                           "relation_type": "SAID", "fact": f"The user said: {said}",
                           "valid_at": when, "invalid_at": None, "episode_indices": [0]}
                          ] if said and targets and "user" in listed else []
    elif "entity_resolutions" in reply:
        reply["entity_resolutions"] = [
            {"id": n["id"], "name": n["name"], "duplicate_candidate_id": -1}
            for n in json.loads(_tagged(text, "ENTITIES") or "[]")]
    elif "valid_at" in reply:
        reply["valid_at"] = when
    return json.dumps(reply)


def peer_reply(messages: list[Message]) -> str:
    """mem0's, LangMem's or graphiti's memory reply, else a short answer (MCQ questions get
    "A")."""
    if any("## New Messages" in m.content for m in messages):
        return mem0_reply(messages)
    if any("You can call these tools" in m.content for m in messages):
        return langmem_reply(messages)
    if messages and SCHEMA_NOTE in messages[-1].content:
        return graphiti_reply(messages)
    return "A" if "Answer with the letter" in messages[-1].content else "Noted."


def peer_llm() -> FakeLLM:
    return FakeLLM([peer_reply])
