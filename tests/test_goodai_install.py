"""The GoodAI set-up's checks before anything is installed or run (no venv needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memlab.errors import ConfigError, MemlabError
from memlab.integrations import goodai


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memlab.cli", *args], capture_output=True,
                          text=True, timeout=120)


def test_a_folder_that_is_not_a_goodai_checkout_is_refused_naming_it(tmp_path):
    with pytest.raises(ConfigError, match="not a GoodAI LTM Benchmark checkout"):
        goodai.install(tmp_path, tmp_path / "home")
    assert not (tmp_path / "home").exists()
    done = run_cli("goodai-run", "--goodai-src", str(tmp_path), "--definitions", str(tmp_path),
                   "--home", str(tmp_path / "home"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert str(tmp_path) in done.stderr and "Traceback" not in done.stderr


def test_definitions_without_config_or_a_type_are_refused(tmp_path):
    checkout = goodai.GoodAICheckout(root=tmp_path / "home")
    with pytest.raises(ConfigError, match="no config.yml"):
        goodai.prepare_run(checkout, tmp_path, run_name="r")
    (tmp_path / "config.yml").write_text("config: {run_name: x}\ndatasets: {args: {}, datasets: []}\n")
    with pytest.raises(ConfigError, match="no test definitions of type colours"):
        goodai.prepare_run(checkout, tmp_path, run_name="r", types=("colours",))


def test_the_runner_gets_a_virtual_display_only_without_one(tmp_path, monkeypatch):
    checkout = goodai.GoodAICheckout(root=tmp_path)
    monkeypatch.setenv("DISPLAY", ":7")
    command = goodai.runner_command(checkout, tmp_path / "c.yml", "http://127.0.0.1:1")
    assert command[0] == str(checkout.python) and command[-4:] == ["-a", "memlab", "-y", "-l"]
    monkeypatch.delenv("DISPLAY")
    monkeypatch.setattr(goodai.shutil, "which", lambda name: None)
    with pytest.raises(MemlabError, match="apt-get install xvfb"):
        goodai.runner_command(checkout, tmp_path / "c.yml", "http://127.0.0.1:1")
    monkeypatch.setattr(goodai.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert goodai.runner_command(checkout, tmp_path / "c.yml", "u", isolated=True)[:2] == [
        "/usr/bin/xvfb-run", "-a"]


def test_goodai_filler_is_memlabs_own_in_goodais_trivia_format(tmp_path):
    import json

    goodai.write_trivia(tmp_path / "trivia.json")
    data = json.loads((tmp_path / "trivia.json").read_text())["Data"]
    assert len(data) == goodai.TRIVIA_ITEMS and set(data[0]) == {"Question", "AnswerValue"}
