"""The rule for deleting (issue 42, item 1): a command deletes only what it created.

Every command option that takes a folder to create or replace is given a user's folder that
already holds a file (``thesis.txt``); whatever the command does with it, succeed or refuse,
the file is still there with the same bytes. A folder memlab would have to delete things in
(GoodAI's ``--home``, a run folder) is refused when memlab did not make it: exit 2, one line
naming the option or folder and the rule.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from faults_helpers import digest, visible_lines
from services import free_port
from test_report_fixtures import write_run

from memlab import cli
from memlab.integrations import goodai
from memlab.userfiles import OWNED_MARK

THESIS = b"Chapter 3, draft 7: do not lose this.\n\xe2\x9c\x8d"
RUN = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "fake",
       "--embedder", "hashing"]
RUN_ID = "ltm-vanilla-200-s0"
RULE = "memlab deletes only what it created"


def users_folder(path: Path) -> Path:
    """A folder of the user's, holding their thesis."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "thesis.txt").write_bytes(THESIS)
    return path


def assert_kept(before: dict[str, str], folder: Path) -> None:
    """Every file the folder held is there with the same bytes (new files may be added)."""
    after = digest(folder)
    assert (folder / "thesis.txt").read_bytes() == THESIS
    assert {f: after.get(f) for f in before} == before


def call_main(argv: list[str]) -> int:
    try:
        return cli.main(argv)
    except SystemExit as exc:  # argparse's own errors
        return int(exc.code or 0)


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------- GoodAI's --home
def fake_goodai(root: Path) -> tuple[Path, Path]:
    """A minimal GoodAI checkout and a definitions folder with one Colours test."""
    src = root / "goodai-src"
    (src / "runner").mkdir(parents=True)
    (src / "runner" / "run_benchmark.py").write_text("print('GoodAI')\n")
    (src / "SNAPSHOT.md").write_text("snapshot 1\n")
    definitions = root / "definitions"
    (definitions / "Colours").mkdir(parents=True)
    (definitions / "Colours" / "0.def.json").write_text(json.dumps(COLOURS_TEST))
    (definitions / "config.yml").write_text(
        "config: {run_name: x}\ndatasets:\n  args: {dataset_examples: 1, memory_span: 1000}\n"
        "  datasets: [{name: colours, args: {colour_changes: 1}}]\n")
    return src, definitions


COLOURS_TEST = {  # GoodAI's format (a published 1k definition, shortened)
    "script": ["My favourite colour is Red.", "What is my favourite colour?"],
    "is_question": [False, True], "waits": [{"percentage_finished": 50.0}, {}],
    "expected_responses": ["Red"], "can_be_interleaved": True, "is_temporal": False,
    "uses_callback": False}


def fake_python(root: Path) -> str:
    """A stand-in for ``python`` whose ``-m venv DIR`` makes a venv whose python accepts any
    command (pip included): the install runs to its end offline in a moment."""
    script = root / "fake-python"
    script.write_text('#!/bin/sh\nmkdir -p "$3/bin"\nprintf \'#!/bin/sh\\nexit 0\\n\' > '
                      '"$3/bin/python"\nchmod +x "$3/bin/python"\n')
    script.chmod(0o755)
    return str(script)


def test_goodai_run_refuses_a_home_it_did_not_make(work, capsys, monkeypatch):
    """Failed before: ``--home mine`` deleted mine, thesis and all, then installed there."""
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # before the fix: fail fast after the deletion
    src, definitions = fake_goodai(work)
    mine = users_folder(work / "mine")
    before = digest(mine)
    status = call_main(["goodai-run", "--goodai-src", str(src), "--definitions",
                        str(definitions), "--types", "colours", "--home", str(mine)])
    assert status == 2
    line = one_line(capsys)
    assert "--home" in line and str(mine) in line and RULE in line, line
    assert_kept(before, mine)
    assert digest(mine) == before  # not even a mark left in it


def test_goodai_reinstall_replaces_only_what_it_made(work):
    """Failed before: a reinstall (a new snapshot) deleted the whole home, a file the user had
    put there with it."""
    src, _ = fake_goodai(work)
    home = work / "home"
    checkout = goodai.install(src, home, python=fake_python(work))
    assert (home / OWNED_MARK).exists() and checkout.python.exists()
    (home / "thesis.txt").write_bytes(THESIS)
    (src / "SNAPSHOT.md").write_text("snapshot 2\n")  # a new source: installed again
    goodai.install(src, home, python=fake_python(work))
    assert (home / "thesis.txt").read_bytes() == THESIS
    assert (checkout.src / "SNAPSHOT.md").read_text() == "snapshot 2\n"


def test_goodai_home_made_by_an_earlier_install_is_still_memlabs(work):
    """A home installed before the mark existed has the install key: it is memlab's."""
    src, _ = fake_goodai(work)
    home = work / "home"
    home.mkdir()
    (home / goodai.INSTALLED_MARK).write_text("an older key\n")
    (home / "src").mkdir()
    goodai.install(src, home, python=fake_python(work))
    assert (home / "src" / "SNAPSHOT.md").exists()


# ------------------------------------------------------------------------- run folders
def test_a_run_folder_of_the_users_files_is_refused(work, capsys):
    """Failed before: ``mine/<run id>/`` was taken for a new run and its ``store/`` emptied."""
    folder = users_folder(work / "out" / RUN_ID)
    users_folder(folder / "store")
    before = digest(work / "out")
    assert call_main([*RUN, "--out", "out"]) == 2
    line = one_line(capsys)
    assert f"run folder 'out/{RUN_ID}'" in line and RULE in line, line
    assert digest(work / "out") == before


def test_an_interrupted_run_folder_is_still_resumed(work):
    """A run killed before its manifest has its lock file: memlab's own, resumed."""
    (work / "out" / RUN_ID).mkdir(parents=True)
    (work / "out" / RUN_ID / "run.lock").touch()
    (work / "out" / RUN_ID / "turns.jsonl").touch()
    assert call_main([*RUN, "--out", "out"]) == 0
    assert json.loads((work / "out" / RUN_ID / "manifest.json").read_text())["status"] == \
        "complete"


# ------------------------------------------------------------------------- every option
def _paper(work: Path, mine: Path) -> list[str]:
    from memlab import grid

    for cell in grid.QUICK.cells(llm="fake", embedder="hashing"):  # every cell complete
        write_run(mine, cell.condition, cell.suite, cell.seed, cell.span,
                  probes=cell.probes_sleep, spec=cell)
    figures = users_folder(work / "figures")
    return ["paper", "--results", str(mine), "--figures", str(figures), "--llm", "fake",
            "--embedder", "hashing"]


def _grid(work: Path, mine: Path) -> list[str]:
    (work / "one.yaml").write_text("name: one\nconditions: [vanilla]\nsuites: [ltm]\n"
                                   "spans: {ltm: [200]}\nsleep_probes: false\n")
    return ["grid", "--spec", "one.yaml", "--llm", "fake", "--embedder", "hashing",
            "--results", str(mine)]


def _docqa(action: str) -> Callable[[Path, Path], list[str]]:
    def argv(work: Path, mine: Path) -> list[str]:
        (work / "docs").mkdir(exist_ok=True)
        (work / "docs" / "a.md").write_text("Balance comes from the inner ear and the feet.\n")
        if action == "ingest":
            return ["docqa", "ingest", "docs", "--workdir", str(mine), "--embedder", "hashing"]
        return ["docqa", "ask", "What keeps balance?", "--workdir", str(mine), "--llm", "fake",
                "--embedder", "hashing"]
    return argv


def _decide(work: Path, mine: Path) -> list[str]:
    from test_decision_debate import USER

    (work / "input.json").write_text(json.dumps(USER))
    return ["decide", "input.json", "--out", str(mine), "--session-id", "d1"]


def _taskforce(action: str) -> Callable[[Path, Path], list[str]]:
    def argv(work: Path, mine: Path) -> list[str]:
        what = ["run", "Compute 2 + 3"] if action == "run" else ["resume", "no-such-session"]
        return ["taskforce", *what, "--workdir", str(mine), "--docs", str(work / "none"),
                "--llm", "fake", "--embedder", "hashing", "--max-steps", "1"]
    return argv


def _lab(work: Path, mine: Path) -> list[str]:
    return ["lab", "--dir", str(mine), "--no-browser"]


# (option, argv maker, exit statuses the command may end with: what matters is the thesis)
OPTIONS = [
    ("run --out", lambda work, mine: [*RUN, "--out", str(mine)], {0}),
    ("grid --results", _grid, {0}),
    ("paper --results --figures", _paper, {0}),
    ("docqa ingest --workdir", _docqa("ingest"), {0}),
    ("docqa ask --workdir", _docqa("ask"), {1}),
    ("decide --out", _decide, {0}),
    ("taskforce run --workdir", _taskforce("run"), {0, 1}),
    ("taskforce resume --workdir", _taskforce("resume"), {1, 2}),
    ("lab --dir", _lab, {0}),
]


@pytest.mark.parametrize("option, make_argv, statuses", OPTIONS, ids=[o[0] for o in OPTIONS])
def test_no_option_deletes_a_file_of_the_users_folder(option, make_argv, statuses, work,
                                                      monkeypatch):
    if option == "decide --out":
        from test_decision_debate import Script

        from memlab.llm.fake import FakeLLM

        monkeypatch.setattr("memlab.lab.make_llm", lambda *a, **k: FakeLLM([Script()]))
    if option == "lab --dir":  # JupyterLab itself is not started: the folder is what counts
        monkeypatch.setattr("memlab.cli.runs.importlib.util.find_spec", lambda name: True)
        monkeypatch.setattr("memlab.cli.runs.subprocess.call", lambda command: 0)
    mine = users_folder(work / "mine")
    argv = make_argv(work, mine)
    folders = [mine] + [work / "figures"] * (option.startswith("paper"))
    before = {folder: digest(folder) for folder in folders}
    assert call_main(argv) in statuses
    for folder in folders:
        assert_kept(before[folder], folder)


@contextmanager
def serving(folder: Path) -> Iterator[dict[str, str]]:
    """``memlab serve --workdir folder`` on a free port, healthy (``["url"]``); stopped on exit,
    its stderr then in ``["log"]``."""
    from test_server_http import start_serve, wait_healthy

    port = free_port()
    server = {"url": f"http://127.0.0.1:{port}"}
    proc = start_serve(folder, port)
    try:
        wait_healthy(server["url"], proc)
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        _, server["log"] = proc.communicate(timeout=30)


def test_serve_and_deleting_its_sessions_keep_the_users_files(work):
    """``memlab serve --workdir`` (also goodai-run's --workdir): DELETE /sessions/{id} removes
    the session's own folder and nothing else."""
    mine = users_folder(work / "mine")
    users_folder(mine / "sessions")  # even inside the folder sessions go to
    before = digest(mine)
    with serving(mine) as server:
        url = server["url"]
        sid = httpx.post(f"{url}/sessions", json={}).json()["id"]
        assert httpx.post(f"{url}/sessions/{sid}/turn", json={"message": "hi"}).status_code == 200
        assert httpx.delete(f"{url}/sessions/{sid}").status_code in (200, 204)
        assert not (mine / "sessions" / sid).exists()
    assert_kept(before, mine)


def test_serve_refuses_a_default_session_folder_holding_the_users_files(work):
    """The seed's ``POST /turn`` makes the ``default`` session in ``sessions/default/``: a user's
    folder of that name is kept as it is, and the turn answers 503 naming the session and the
    rule (the server's path only in its log); other sessions still work."""
    mine = users_folder(work / "mine")
    users_folder(mine / "sessions" / "default")
    before = digest(mine)
    with serving(mine) as server:
        url = server["url"]
        for _ in range(2):  # refused again, not made on the second try
            reply = httpx.post(f"{url}/turn", json={"message": "hi", "history": ""})
            assert reply.status_code == 503, reply.text
            assert set(reply.json()) == {"error"}
            assert reply.json()["error"].startswith("session 'default': its folder holds files")
            assert RULE in reply.json()["error"] and str(mine) not in reply.json()["error"]
        sid = httpx.post(f"{url}/sessions", json={}).json()["id"]
        assert httpx.post(f"{url}/sessions/{sid}/turn", json={"message": "hi"}).status_code == 200
    assert_kept(before, mine)
    assert str(mine / "sessions" / "default") in server["log"]  # the log names the folder
