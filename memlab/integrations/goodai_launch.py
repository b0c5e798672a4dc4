"""GoodAI's benchmark runner with memlab's agent server as its agent (runs in GoodAI's venv).

Executed by the Python of the venv ``memlab goodai-install`` made, never imported by memlab: it
needs only the standard library and GoodAI's checkout. It

1. keeps GoodAI offline: ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (no cost-map download),
   ``TIKTOKEN_CACHE_DIR`` at the cl100k file litellm ships, ``BROWSER=true`` (the report is not
   opened);
2. stands in for GoodAI's model-interface modules memlab does not use (MemGPT, GoodAI's LTM
   agent, Gemini, Hugging Face, length bias) and for ``transformers`` (used only by Hugging Face
   agents), so their heavy dependencies need not be installed; using one of them says so;
3. extends GoodAI's agent list at run time: ``-a memlab`` is :class:`MemlabChatSession`, which
   forwards every message to ``memlab serve`` (a turn; filler with GoodAI's ready-made reply
   through observe, so no reply is generated for it), passes GoodAI's simulated clock as the
   timestamp, resets (a new session) on ``--isolated``, and counts tokens at zero cost;
4. skips GoodAI's HTML report when its templates are missing (they are git-ignored upstream).

    python goodai_launch.py --checkout SRC --server URL [--token T] [--timeout S] -- \\
        -c CONFIG -a memlab -y -l [-i]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import types
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

UNUSED_INTERFACES = {
    "model_interfaces.memgpt_interface": ["MemGPTChatSession"],
    "model_interfaces.ltm_agent_wrapper": ["LTMAgentWrapper", "LTMAgentVariant"],
    "model_interfaces.gemini_interface": ["GeminiProInterface"],
    "model_interfaces.huggingface_interface": ["HFChatSession"],
    "model_interfaces.length_bias_agent": ["LengthBiasAgent"],
    "transformers": ["AutoTokenizer"],
}


def stand_in(module: str, names: list[str]) -> None:
    """Register ``module`` with classes that refuse to be used (their packages are absent)."""
    def refuse(*_args, **_kwargs):
        raise RuntimeError(f"{module} is not installed in this venv (memlab's GoodAI set-up "
                           "installs only what the memlab agent needs)")

    stub = types.ModuleType(module)
    for name in names:
        setattr(stub, name, type(name, (), {"__init__": refuse, "from_pretrained": refuse}))
    sys.modules[module] = stub


def offline_environment() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("BROWSER", "true")
    import importlib.util

    litellm = importlib.util.find_spec("litellm")
    if litellm is not None and litellm.origin:
        folder = Path(litellm.origin).parent / "litellm_core_utils" / "tokenizers"
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(folder))


class MemlabServer:
    """The few calls the agent makes to ``memlab serve``, each with a deadline."""

    def __init__(self, url: str, token: str, timeout_s: float):
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        self.headers = {"Content-Type": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:300]
            raise RuntimeError(f"memlab server: {method} {path} -> {exc.code}: {detail}") from None
        return json.loads(raw) if raw else {}


class MemlabAgent:
    """One GoodAI agent as a memlab session: what it sends, and the counts it keeps."""

    STATE = ("session_id", "prompt_tokens", "completion_tokens", "replies_generated",
             "exchanges_observed")

    def __init__(self, server: MemlabServer, options: dict):
        self.server, self.options = server, options
        self.session_id = ""
        self.prompt_tokens = self.completion_tokens = 0
        self.replies_generated = self.exchanges_observed = 0

    def reply(self, user_message: str, agent_response: str | None) -> str:
        if not self.session_id:
            self.reset()
        stamp = datetime.now().astimezone().isoformat()  # GoodAI's (simulated) clock
        path = f"/sessions/{self.session_id}"
        if agent_response is not None:  # filler with GoodAI's reply: stored, not generated
            self.server.call("POST", f"{path}/observe", {
                "user": user_message, "assistant": agent_response, "timestamp": stamp})
            self.exchanges_observed += 1
            return agent_response
        answer = self.server.call("POST", f"{path}/turn",
                                  {"message": user_message, "timestamp": stamp})
        self.prompt_tokens += answer["prompt_tokens"]
        self.completion_tokens += answer["completion_tokens"]
        self.replies_generated += 1
        return answer["reply"]

    def reset(self) -> None:
        """Forget everything: delete the session, start a new one."""
        if self.session_id:
            self.server.call("DELETE", f"/sessions/{self.session_id}")
        self.session_id = self.server.call("POST", "/sessions", self.options)["id"]

    def state(self) -> dict:
        return {key: getattr(self, key) for key in self.STATE}

    def restore(self, state: dict) -> None:
        """Continue a saved run on its session (which the server keeps on disk)."""
        for key in self.STATE:
            setattr(self, key, state[key])
        try:
            self.server.call("GET", f"/sessions/{self.session_id}")
        except RuntimeError:
            raise RuntimeError(f"memlab session {self.session_id} of this run is gone from the "
                               "server; resume with the server's --workdir") from None


def make_session_class(base: type) -> type:
    """GoodAI's ChatSession for memlab, built on GoodAI's own base class."""

    @dataclass
    class MemlabChatSession(base):
        agent: MemlabAgent | None = None

        @property
        def name(self) -> str:  # GoodAI's results folder: results/<name>/...
            return f"memlab - {self.agent.options.get('condition', 'server default')}"

        def reply(self, user_message: str, agent_response: str | None = None) -> str:
            return self.agent.reply(user_message, agent_response)  # costs_usd stays 0

        def reset(self) -> None:
            self.agent.reset()

        def save(self) -> None:
            self.save_path.mkdir(parents=True, exist_ok=True)
            (self.save_path / "memlab_session.json").write_text(json.dumps(self.agent.state()))

        def load(self) -> None:
            path = self.save_path / "memlab_session.json"
            if path.exists():
                self.agent.restore(json.loads(path.read_text()))

    return MemlabChatSession


def skip_missing_report_templates() -> None:
    """GoodAI's HTML report templates are git-ignored (``*.html``), so a checkout may lack them;
    then the report is skipped with a note instead of failing a finished run."""
    from jinja2.exceptions import TemplateNotFound
    from runner import scheduler

    generate = scheduler.generate_report

    def generate_report(results, *args, **kwargs):
        try:
            return generate(results, *args, **kwargs)
        except TemplateNotFound as exc:
            print(f"GoodAI's HTML report skipped: template {exc} is not in this checkout; the "
                  "result files are complete", flush=True)
            return Path(scheduler.__file__).resolve().parent.parent / "data" / "tests"

    scheduler.generate_report = generate_report


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description="GoodAI's runner with a memlab agent")
    parser.add_argument("--checkout", required=True, help="GoodAI source folder")
    parser.add_argument("--server", required=True, help="memlab serve URL")
    parser.add_argument("--token", default=os.environ.get("MEMLAB_API_TOKEN", ""))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per request")
    parser.add_argument("--session", default="{}", help="JSON body of POST /sessions")
    split = argv.index("--") if "--" in argv else len(argv)
    args, goodai_args = parser.parse_args(argv[:split]), argv[split + 1:]
    offline_environment()
    # this file's folder (first on the path) holds memlab's goodai.py, which would shadow the
    # ``goodai`` package of goodai-ltm
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [args.checkout, *(p for p in sys.path if Path(p or ".").resolve() != Path(here))]
    for module, names in UNUSED_INTERFACES.items():
        stand_in(module, names)

    from model_interfaces.interface import ChatSession
    from runner import run_benchmark

    session_class = make_session_class(ChatSession)
    server = MemlabServer(args.server, args.token, args.timeout)
    options = json.loads(args.session)
    original = run_benchmark.get_chat_session

    def get_chat_session(name, max_prompt_size, run_name, is_local=False):
        if name != "memlab":
            return original(name, max_prompt_size, run_name, is_local)
        return session_class(run_name=run_name, is_local=True,
                             agent=MemlabAgent(server, options))

    run_benchmark.get_chat_session = get_chat_session
    skip_missing_report_templates()
    run_benchmark.main(args=goodai_args, standalone_mode=False)


if __name__ == "__main__":
    main(sys.argv[1:])
