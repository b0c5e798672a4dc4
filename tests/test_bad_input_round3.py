"""Bad input, round 3 (issue 42 items 2-6, 8 and 9), tried as a user would: JSON nested 100,000
levels deep, files that are not UTF-8, suite options of the wrong type, an OpenAI-compatible
server's reply of the wrong type, a response-cache row that is not JSON, broken GoodAI
definitions and PersonaMem files, and runs that would measure nothing. Each is one line naming
the file or field and the rule (exit 2; 1 where the machine, not the command, is at fault), and
every file already in the working folder (a finished run included) is unchanged."""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from faults_helpers import digest, visible_lines
from test_bad_input_cli import RUN, assert_unchanged, call_main, refused_in_one_line, write
from test_bad_input_personamem import CONTEXT, nine_rows, row
from test_bad_input_personamem import digests as file_digests
from test_bad_input_personamem import write as write_personamem
from test_llm_remote import LoopbackServer, openai_ok

from memlab import cli
from memlab.bench.goodai import TYPE_DIRS, load_definitions
from memlab.bench.suites.locomo import LoCoMoSuite
from memlab.bench.suites.ltm import LTMSuite
from memlab.bench.suites.personamem import PersonaMemSuite
from memlab.config import get_settings
from memlab.errors import ConfigError, LLMError, StoreError
from memlab.llm.base import Completion, Message
from memlab.llm.cache import ResponseCache
from memlab.llm.openai_compat import OpenAICompatLLM

DATA = Path(__file__).parent / "suites_data"
DEEP = "[" * 100_000 + "]" * 100_000
MODELS = ["--llm", "fake", "--embedder", "hashing"]
LOCOMO_RUN = ["run", "-c", "vanilla", "-s", "locomo", "--span", "200", *MODELS]


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """A complete run folder (``out/ltm-vanilla-200-s0``) and the cache it filled."""
    root = tmp_path_factory.mktemp("finished")
    mp = pytest.MonkeyPatch()
    mp.setenv("MEMLAB_CACHE_DIR", str(root / "cache"))
    try:
        assert cli.main([*RUN, "--out", str(root / "out")]) == 0
    finally:
        mp.undo()
    return root


@pytest.fixture
def workdir(tmp_path, monkeypatch, finished) -> Path:
    """A user's working folder holding the finished run in ``out/``; the cache elsewhere."""
    work = tmp_path / "work"
    shutil.copytree(finished / "out", work / "out")
    monkeypatch.setenv("MEMLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(work)
    return work


def nothing(work: Path) -> None:
    return None


def locomo_file(keep: Callable[[dict], bool] = lambda q: True) -> str:
    """The mini LoCoMo file with only the questions ``keep`` keeps."""
    samples = json.loads((DATA / "locomo_mini.json").read_text())
    for sample in samples:
        sample["qa"] = [q for q in sample["qa"] if keep(q)]
    return json.dumps(samples)


def documents(work: Path) -> None:
    (work / "docs").mkdir()
    (work / "docs" / "a.txt").write_text("Humanoids balance with gyroscopes in the torso.\n")
    (work / "docs" / "b.txt").write_bytes("Caf\u00e9 notes, saved as Latin-1.\n".encode("latin-1"))


# (id, setup, argv, exit status, words the one line must hold)
CASES = [
    # item 2: JSON nested 100,000 levels deep
    ("locomo_info_deep_json", write("deep.json", DEEP),
     ["suites", "info", "locomo", "--data", "deep.json"], 2,
     ["locomo data file", "deep.json", "nested too deeply", "1,000 levels"]),
    ("longmemeval_info_deep_json", write("deep.json", DEEP),
     ["suites", "info", "longmemeval", "--data", "deep.json"], 2,
     ["longmemeval data file", "deep.json", "nested too deeply"]),
    ("grid_locomo_deep_json", write("deep.json", DEEP),
     ["grid", "--spec", "quick", "--locomo", "deep.json", *MODELS, "--results", "out"], 2,
     ["locomo data file", "deep.json", "nested too deeply"]),
    ("decide_deep_json", write("deep.json", DEEP), ["decide", "deep.json", "--out", "dec"], 2,
     ["input 'deep.json'", "nested too deeply"]),
    # item 3: not UTF-8
    ("decide_not_utf8", write("in.json", b'{"mbti": "\xe9"}'), ["decide", "in.json"], 2,
     ["input 'in.json'", "not UTF-8", "byte 0xe9 at offset 10", "save it as UTF-8"]),
    ("docqa_ingest_not_utf8", documents, ["docqa", "ingest", "docs", "--workdir", "dq",
                                          "--embedder", "hashing"], 2,
     ["document 'docs/b.txt'", "not UTF-8", "byte 0xe9 at offset 3"]),
    # item 4: LoCoMo options of the wrong type
    ("locomo_conversations_float", write("locomo.json", locomo_file()),
     [*LOCOMO_RUN, "--data", "locomo.json", "--out", "fresh", "-o", "conversations=1.5"], 2,
     ["field 'suite_options.conversations'", "1.5", "a count", "list of ids"]),
    ("locomo_categories_not_a_list", write("locomo.json", locomo_file()),
     [*LOCOMO_RUN, "--data", "locomo.json", "--out", "fresh", "-o", "categories=5"], 2,
     ["field 'suite_options.categories'", "non-empty list", "categories=[1, 2]"]),
    ("locomo_judge_not_a_bool", write("locomo.json", locomo_file()),
     [*LOCOMO_RUN, "--data", "locomo.json", "--out", "fresh", "-o", "judge=maybe"], 2,
     ["field 'suite_options.judge'", "true or false"]),
    # item 9: runs that would measure nothing
    ("ltm_examples_negative", nothing, [*RUN, "--out", "fresh", "-o", "examples=-2"], 2,
     ["field 'suite_options.examples'", "-2", "at least 1"]),
    ("locomo_only_category_5", write("cat5.json", locomo_file(lambda q: q["category"] == 5)),
     [*LOCOMO_RUN, "--data", "cat5.json", "--out", "fresh"], 2,
     ["cat5.json", "categories [5], none in [1, 2, 3, 4]", "would measure nothing"]),
    ("grid_locomo_only_category_5", write("cat5.json", locomo_file(lambda q: q["category"] == 5)),
     ["grid", "--spec", "quick", "--locomo", "cat5.json", *MODELS, "--results", "out"], 2,
     ["cat5.json", "categories [5]", "would measure nothing"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_user_mistake_is_one_line_and_changes_nothing(case, workdir, capsys):
    _name, setup, argv, status, words = case
    setup(workdir)
    refused_in_one_line(argv, status, words, workdir, capsys)


def test_a_bad_document_is_refused_before_the_store_is_opened(workdir, capsys):
    (workdir / "good").mkdir()
    (workdir / "good" / "g.txt").write_text("Gyroscopes in the torso keep a humanoid upright.\n")
    ingest = ["docqa", "ingest", "--workdir", "dq", "--embedder", "hashing"]
    assert call_main([ingest[0], ingest[1], "good", *ingest[2:]]) == 0
    documents(workdir)
    before = digest(workdir)
    assert call_main([ingest[0], ingest[1], "docs", *ingest[2:]]) == 2
    assert "docs/b.txt" in capsys.readouterr().err
    assert_unchanged(before, digest(workdir))


# --- item 5: an OpenAI-compatible reply whose fields have the wrong type -----------------------

def reply(**changes) -> dict:
    answer = openai_ok()
    for path, value in changes.items():
        target, *keys = answer, *path.split("__")
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[keys[-1]] = value
    return answer


WRONG_REPLIES = {
    "content_a_number": (reply(choices__0__message__content=42),
                         "field 'choices[0].message.content' must be text, got int '42'"),
    "usage_a_string": (reply(usage="lots"), "field 'usage' must be an object, got str 'lots'"),
    "token_count_a_string": (reply(usage={"prompt_tokens": "many", "completion_tokens": 3}),
                             "field 'usage.prompt_tokens' must be a whole number"),
    "token_count_negative": (reply(usage={"prompt_tokens": -5, "completion_tokens": 3}),
                             "field 'usage.prompt_tokens' must be a whole number of at least 0"),
    "model_a_number": (reply(model=7), "field 'model' must be a name"),
}


@pytest.fixture
def server():
    srv = LoopbackServer()
    yield srv
    srv.close()


@pytest.mark.parametrize("case", WRONG_REPLIES)
def test_a_reply_field_of_the_wrong_type_is_a_failed_call_naming_it(case, server, tmp_path):
    answer, words = WRONG_REPLIES[case]
    server.answer((200, answer))
    llm = OpenAICompatLLM(model="qwen", base_url=server.url, retry_base_delay_s=0.01,
                          settings=get_settings(cache_dir=tmp_path, llm_cache=False))
    with pytest.raises(LLMError) as caught:
        llm.complete([{"role": "user", "content": "Capital of France?"}], max_tokens=8)
    assert f"openai {server.url}/v1/chat/completions: unexpected answer shape" in str(caught.value)
    assert words in str(caught.value)


def test_a_run_against_a_server_replying_a_number_fails_in_one_line(server, workdir, capsys,
                                                                     monkeypatch):
    server.answer((200, reply(choices__0__message__content=42)))
    for key, value in {"MEMLAB_OPENAI_BASE_URL": server.url, "MEMLAB_LLM_MODEL": "m",
                       "MEMLAB_MAX_RETRIES": "0", "MEMLAB_LLM_CACHE": "0"}.items():
        monkeypatch.setenv(key, value)
    before = digest(workdir / "out")
    argv = ["run", "-c", "vanilla", "-s", "ltm", "--span", "200", "--llm", "openai",
            "--embedder", "hashing", "--out", "fresh", "-o", "examples=1", "-o", "types=[colours]"]
    assert call_main(argv) == 1
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "RunFailedError" in lines[0]
    assert "field 'choices[0].message.content' must be text, got int '42'" in lines[0]
    assert digest(workdir / "out") == before
    manifest = json.loads(next((workdir / "fresh").glob("*/manifest.json")).read_text())
    assert manifest["status"] == "failed"


# --- item 6: a response-cache row that is not JSON ---------------------------------------------

def corrupt_rows(cache_file: Path, value: str = "{not json") -> None:
    with sqlite3.connect(cache_file) as conn:
        conn.execute("UPDATE responses SET value = ?", (value,))


def test_a_cache_row_that_is_not_json_names_the_cache_and_what_to_do(tmp_path):
    cache = ResponseCache(tmp_path / "llm_cache.sqlite")
    messages = [Message(role="user", content="hi")]
    cache.put("fake", "m", messages, {}, Completion(text="hello", prompt_tokens=1,
                                                    completion_tokens=1, latency_s=0, model="m"))
    cache.put_scores("fake", "m", messages, ["a", "b"], [0.1, 0.2])
    for value in ("{not json", '{"text": 5}', "[[[[1]]]]"):
        corrupt_rows(cache.path, value)
        for read in (lambda: cache.get("fake", "m", messages, {}),
                     lambda: cache.get_scores("fake", "m", messages, ["a", "b"])):
            with pytest.raises(StoreError) as caught:
                read()
            message = str(caught.value)
            assert f"LLM response cache {cache.path}: a cached answer cannot be read" in message
            assert "delete it" in message and "\n" not in message


def test_a_run_on_a_cache_with_a_row_that_is_not_json_fails_in_one_line(finished, workdir,
                                                                      capsys, monkeypatch):
    shutil.copytree(finished / "cache", workdir / "cache")
    corrupt_rows(workdir / "cache" / "llm_cache.sqlite")
    monkeypatch.setenv("MEMLAB_CACHE_DIR", "cache")
    before = digest(workdir / "out")
    assert call_main([*RUN, "--out", "fresh"]) == 1
    err = capsys.readouterr().err
    lines = visible_lines(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "LLM response cache cache/llm_cache.sqlite: a cached answer cannot be read" in lines[0]
    assert "Invalid JSON" in lines[0] and "delete it" in lines[0]
    assert digest(workdir / "out") == before


# --- item 8: GoodAI definitions ------------------------------------------------------------------

def definitions(folder: Path) -> Path:
    """A GoodAI definitions folder: config.yml and one generated test per type (GoodAI's
    format, as ``write_goodai`` readers expect)."""
    types = ["colours", "jokes", "prospective_memory"]
    folder.mkdir(parents=True)
    (folder / "config.yml").write_text(
        "config: {run_name: mine}\ndatasets:\n  args: {memory_span: 1000, dataset_examples: 1}\n"
        "  datasets:\n" + "".join(f"  - name: {t}\n" for t in types))
    for test in LTMSuite(examples=1, types=types).tests:
        path = folder / TYPE_DIRS[test.test_type] / "0.def.json"
        path.parent.mkdir()
        path.write_text(json.dumps(test.definition.model_dump()))
    return folder


def edit(folder_name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        path = folder / folder_name / "0.def.json"
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return apply


def without_is_temporal(data: dict) -> None:
    """A jokes test written without ``is_temporal`` (and so without its run-time question)."""
    del data["is_temporal"]
    data["is_question"], data["waits"] = data["is_question"][:-1], data["waits"][:-1]


def rewrite_config(text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / "config.yml").write_text(text)


def emptied(folder: Path) -> None:
    for path in folder.iterdir():
        if path.is_dir():
            shutil.rmtree(path)


# (id, change, GoodAI type for goodai-run --types, words of the error)
GOODAI_CASES = [
    ("prospective_expected_not_a_count",
     edit("Prospective Memory", lambda d: d["expected_responses"][0].__setitem__(2, "five")),
     "prospective_memory",
     ["Prospective Memory/0.def.json", "field 'expected_responses'", "[quote, author, n]"]),
    ("prospective_expected_a_string",
     edit("Prospective Memory", lambda d: d.__setitem__("expected_responses", ["quote"])),
     "prospective_memory", ["Prospective Memory/0.def.json", "field 'expected_responses'"]),
    ("jokes_without_is_temporal", edit("Jokes", without_is_temporal), "jokes",
     ["Jokes/0.def.json", "field 'is_temporal'", "must be true"]),
    ("colours_marked_temporal", edit("Colours", lambda d: d.update(
        is_temporal=True, is_question=[*d["is_question"], True], waits=[*d["waits"], {}])),
     "colours", ["Colours/0.def.json", "field 'is_temporal'", "must be false"]),
    ("config_span_not_a_number", rewrite_config(
        "datasets:\n  args: {memory_span: lots}\n  datasets:\n  - name: colours\n"), "colours",
     ["config.yml", "field 'datasets.args'", "memory_span 'lots' must be a whole number"]),
    ("config_a_list", rewrite_config("- colours\n- jokes\n"), "colours",
     ["config.yml", "field '(the whole file)'", "valid dictionary"]),
    ("no_definitions", emptied, "colours", ["defs", "no test definitions"]),
]


@pytest.mark.parametrize("case", GOODAI_CASES, ids=[c[0] for c in GOODAI_CASES])
def test_broken_goodai_definitions_are_refused_naming_file_and_field(case, tmp_path):
    _name, change, _type, words = case
    folder = definitions(tmp_path / "defs")
    assert len(LTMSuite.from_definitions(folder).tests) == 3  # intact, they load
    change(folder)
    before = digest(folder)
    with pytest.raises(ConfigError) as caught:
        LTMSuite.from_definitions(folder).events()
    message = str(caught.value)
    assert "\n" not in message and all(word in message for word in words), message
    assert digest(folder) == before


@pytest.mark.parametrize("case", GOODAI_CASES, ids=[c[0] for c in GOODAI_CASES])
def test_goodai_run_refuses_broken_definitions_before_installing(case, workdir, capsys):
    _name, change, goodai_type, words = case
    change(definitions(workdir / "defs"))
    before = digest(workdir)
    assert call_main(["goodai-run", "--goodai-src", "no-checkout-here", "--definitions", "defs",
                      "--types", goodai_type, "--home", "home"]) == 2
    lines = visible_lines(capsys.readouterr().err)
    assert len(lines) == 1 and all(word in lines[0] for word in words), lines
    assert_unchanged(before, digest(workdir))


def test_only_the_chosen_types_are_read(tmp_path):
    folder = definitions(tmp_path / "defs")
    edit("Jokes", without_is_temporal)(folder)
    _config, tests = load_definitions(folder, types=["colours"])
    assert [t.test_type for t in tests] == ["colours"]
    with pytest.raises(ConfigError, match="Jokes/0.def.json: field 'is_temporal'"):
        load_definitions(folder)


# --- item 8: PersonaMem files --------------------------------------------------------------------

def drop_question_column(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "user_question_or_message"} for r in rows]


def set_field(field: str, value: str) -> Callable[[list[dict]], list[dict]]:
    def change(rows: list[dict]) -> list[dict]:
        rows = [{field: "", **r} for r in rows]  # a column every row has
        rows[4][field] = value  # the fifth data row is row 6 of the file
        return rows
    return change


def same(rows: list[dict]) -> list[dict]:
    return rows


# (change of the question rows, the shared context's messages (None: CONTEXT), which file
# the error names, words of the error)
PERSONAMEM_CASES = {
    "question_column_missing": (drop_question_column, None, "questions",
                                "column(s) user_question_or_message missing from the header"),
    "options_garbage": (set_field("all_options", "(a) yes, (b) no"), None, "questions",
                        "row 6: field 'all_options': '(a) yes, (b) no' is not a list"),
    "options_not_text": (set_field("all_options", "[1, 2, 3, 4]"), None, "questions",
                         "row 6: field 'all_options'"),
    "metadata_not_json": (set_field("memlab_metadata", "{broken"), None, "questions",
                          "row 6: field 'memlab_metadata': not valid JSON"),
    "metadata_a_list": (set_field("memlab_metadata", "[1, 2]"), None, "questions",
                        "row 6: field 'memlab_metadata': must be a JSON object, got list"),
    "metadata_bad_time": (set_field("memlab_metadata", '{"timestamp": "teatime"}'), None,
                          "questions", "row 6: field 'memlab_metadata': field 'timestamp'"),
    "metadata_deep": (set_field("memlab_metadata", "[" * 20_000 + "]" * 20_000), None,
                      "questions",
                      "row 6: field 'memlab_metadata': JSON nested too deeply"),
    "context_row_without_role": (same, [*CONTEXT[:3], {"content": "User: no role"}], "contexts",
                                 "message 3: field 'role' None must be one of"),
    "context_a_string": (same, "User: I love rock climbing.", "contexts",
                         "shared context 'abc': must be a list of messages, got str"),
}


@pytest.mark.parametrize("case", PERSONAMEM_CASES)
def test_broken_personamem_files_are_refused_naming_file_and_field(case, tmp_path):
    change, messages, which, words = PERSONAMEM_CASES[case]
    questions, contexts = write_personamem(tmp_path, change(nine_rows()))
    if messages is not None:
        contexts.write_text(json.dumps({"abc": messages}) + "\n")
    before = file_digests(questions, contexts)
    with pytest.raises(ConfigError) as caught:
        PersonaMemSuite(questions, contexts)
    message = str(caught.value)
    named = questions if which == "questions" else contexts
    assert str(named) in message and words in message and "\n" not in message, message
    assert file_digests(questions, contexts) == before


@pytest.mark.parametrize("rows, limit, words", [
    ([], None, "no question rows under the header"),
    ([row(0, "1")], 0, "limit: 0 must be a whole number of at least 1"),
])
def test_personamem_with_no_question_to_ask_is_refused(tmp_path, rows, limit, words):
    questions, contexts = write_personamem(tmp_path, rows or [row(0, "1")])
    if not rows:
        with questions.open("w", newline="") as f:
            csv.DictWriter(f, fieldnames=list(row(0, "1"))).writeheader()
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        PersonaMemSuite(questions, contexts, limit=limit)


# --- item 9: runs that would measure nothing (Python API) -------------------------------------

def test_a_suite_without_questions_is_refused_before_its_folder_is_made(tmp_path):
    from test_runner import TinySuite, fake_reply, run

    from memlab.llm.fake import FakeLLM

    class NoQuestions(TinySuite):
        """Needles and filler, no question (a suite whose options select none)."""

        def events(self):
            kept = [e for e in super().events() if e.kind != "question"]
            return [e.model_copy(update={"index": i}) for i, e in enumerate(kept)]

    with pytest.raises(ConfigError, match="asks no question .* would measure nothing"):
        run(NoQuestions(), "vanilla", llm=FakeLLM([fake_reply]), results_dir=tmp_path,
            progress=False)
    assert list(tmp_path.iterdir()) == []


def test_locomo_selecting_no_question_says_why(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(locomo_file())
    with pytest.raises(ConfigError, match=r"categories \[4\], none in \[1\] \(option categories"):
        LoCoMoSuite(str(path), conversations=["conv-b"], categories=[1]).events()
    with pytest.raises(ConfigError, match=r"in the first 1 sessions \(option sessions\)"):
        LoCoMoSuite(str(path), conversations=["conv-a"], sessions=1, categories=[2]).events()
