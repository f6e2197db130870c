"""aiforge batch: a prompt template over the rows of a CSV, Parquet or JSONL file, through the DataFrame accessor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli import run

REVIEWS = str(Path(__file__).parent / "data" / "reviews.csv")


@pytest.fixture
def sentiment_provider() -> list[str]:
    """A registered function provider answering "pos" for reviews that love or praise, else "neg"; records prompts."""
    from aiforge import register_provider

    prompts: list[str] = []

    def answer(messages: list[dict[str, str]], **params: object) -> str:
        text = messages[-1]["content"]
        prompts.append(text)
        return json.dumps("pos" if "Love" in text or "great" in text else "neg")

    register_provider("sentiment", answer)
    return prompts


def test_batch_over_a_csv_writes_each_rows_answer_to_stdout(tmp_path) -> None:
    source = tmp_path / "notes.csv"
    source.write_text("id,note\n1,alpha\n2,beta\n", encoding="utf-8")

    code, out = run("batch", str(source), "--prompt", "Repeat {note}", "-p", "scripted")

    assert code == 0
    assert out.splitlines() == ["id,note,response", "1,alpha,You said: Repeat alpha", "2,beta,You said: Repeat beta"]


def test_batch_with_labels_adds_a_label_column(sentiment_provider: list[str], tmp_path) -> None:
    target = tmp_path / "labelled.jsonl"

    code, _ = run("batch", REVIEWS, "--prompt", "Sentiment of: {review}", "--labels", "pos,neg", "-p", "sentiment",
                  "-o", str(target))

    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert code == 0 and len(rows) == 60
    assert rows[0]["label"] == "pos" and rows[1]["label"] == "neg" and rows[0]["review"].endswith("Love it!")
    assert sentiment_provider[0].startswith("Sentiment of: This kettle boils water")


def test_batch_with_a_json_schema_adds_its_fields_as_columns(tmp_path) -> None:
    from aiforge import register_provider

    register_provider("extractor", lambda messages, **params: json.dumps({"name": "Ana", "age": 41}))
    schema = tmp_path / "person.json"
    schema.write_text(json.dumps({"type": "object", "properties": {"name": {"type": "string"},
                                  "age": {"type": "integer"}}, "required": ["name"]}), encoding="utf-8")
    source = tmp_path / "people.jsonl"
    source.write_text('{"bio": "Ana is 41."}\n', encoding="utf-8")

    code, out = run("batch", str(source), "--prompt", "Extract: {bio}", "--schema", str(schema), "-p", "extractor")

    assert code == 0 and out.splitlines() == ["bio,name,age", "Ana is 41.,Ana,41"]


def test_batch_checkpoint_makes_a_rerun_ask_nothing(sentiment_provider: list[str], tmp_path) -> None:
    checkpoint = tmp_path / "run.sqlite"
    argv = ("batch", REVIEWS, "--prompt", "Sentiment of: {review}", "--labels", "pos,neg", "-p", "sentiment",
            "--checkpoint", str(checkpoint))

    first = run(*argv)
    asked = len(sentiment_provider)
    second = run(*argv)

    assert first == second and first[0] == 0
    assert asked == 60 and len(sentiment_provider) == 60


def test_batch_errors_are_one_line_with_exit_code_two(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "notes.csv"
    source.write_text("id,note\n1,alpha\n", encoding="utf-8")

    assert run("batch", str(source), "--prompt", "Repeat {nope}", "-p", "scripted")[0] == 2
    assert "nope" in capsys.readouterr().err
    assert run("batch", str(tmp_path / "missing.csv"), "--prompt", "x", "-p", "scripted")[0] == 2
    assert "no such file" in capsys.readouterr().err
    assert run("batch", str(tmp_path / "notes.xlsx"), "--prompt", "x", "-p", "scripted")[0] == 2
    assert "use a .csv, .parquet or .jsonl file" in capsys.readouterr().err


def test_parquet_without_pyarrow_says_how_to_install_it(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pandas")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("pyarrow is installed")
    source = tmp_path / "rows.parquet"
    source.write_bytes(b"PAR1")

    code, _ = run("batch", str(source), "--prompt", "x", "-p", "scripted")

    assert code == 2 and capsys.readouterr().err == "aiforge: error: Parquet files need pyarrow: pip install pyarrow\n"


def test_a_failed_row_keeps_its_error_and_the_others_their_answers(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiforge import register_provider

    def flaky(messages: list[dict[str, str]], **params: object) -> str:
        if "beta" in messages[-1]["content"]:
            raise RuntimeError("backend down")
        return "fine"

    register_provider("flaky", flaky)
    source = tmp_path / "notes.csv"
    source.write_text("note\nalpha\nbeta\n", encoding="utf-8")

    code, out = run("batch", str(source), "--prompt", "{note}", "-p", "flaky", "--max-tokens", "5")

    header, first, second = out.splitlines()
    assert code == 0 and header == "note,response,error"
    assert first == "alpha,fine," and second.startswith("beta,,") and "backend down" in second
    # the closing line says so, pointing at the error column, with no warning about a Python object
    err = capsys.readouterr().err
    assert "1 of 2 rows answered, $0.0000; 1 of 2 rows failed (first: ProviderError: " in err
    assert "see the error column" in err and "attrs" not in err and "Warning" not in err


def test_batch_cache_file_answers_a_rerun_without_asking(sentiment_provider: list[str], tmp_path) -> None:
    argv = ("batch", REVIEWS, "--prompt", "Sentiment of: {review}", "--labels", "pos,neg", "-p", "sentiment",
            "--cache", str(tmp_path / "cache.sqlite"))

    first = run(*argv)
    second = run(*argv)

    assert first == second and first[0] == 0 and len(sentiment_provider) == 60


# -- the output is checked before the first request; answers survive a failed write (issue 22 item 7) -------


@pytest.fixture
def counted(tmp_path) -> list[str]:
    """A registered provider "counted" answering "ok <row>" and recording each prompt it answers."""
    from aiforge import register_provider

    asked: list[str] = []

    def answer(messages: list[dict[str, str]], **params: object) -> str:
        asked.append(messages[-1]["content"])
        return f"ok {messages[-1]['content']}"

    register_provider("counted", answer)
    return asked


def notes(tmp_path, rows: int = 3):
    source = tmp_path / "notes.csv"
    source.write_text("id,note\n" + "".join(f"{i},note {i}\n" for i in range(rows)), encoding="utf-8")
    return source


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("labelled.parquet", "-o labelled.parquet: Parquet files need pyarrow: pip install pyarrow (or write .csv"),
        ("labelled.xlsx", "use a .csv, .parquet or .jsonl file (got '.xlsx')"),
        ("no/such/folder/labelled.csv", "-o no/such/folder/labelled.csv: there is no folder"),
        (".", "is a folder"),
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_any_request(
    counted: list[str], tmp_path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, target: str,
    says: str,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # the README's venv: no pyarrow (import pyarrow fails)
    if target == ".":
        target = str(tmp_path / "out.csv")
        (tmp_path / "out.csv").mkdir()

    code, _ = run("batch", str(notes(tmp_path)), "--prompt", "{note}", "-p", "counted", "-o", target)

    err = capsys.readouterr().err
    assert code == 2 and says in err and err.count("\n") == 1
    assert counted == []  # nothing asked, nothing paid


def test_when_writing_fails_after_the_batch_the_answers_are_rescued_and_the_line_says_where(
    tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    from aiforge import register_provider

    target = tmp_path / "labelled.csv"
    asked: list[str] = []

    def answer(messages: list[dict[str, str]], **params: object) -> str:
        target.mkdir(exist_ok=True)  # the target becomes a folder after the check: the write fails
        asked.append(messages[-1]["content"])
        return f"ok {messages[-1]['content']}"

    register_provider("blocking", answer)

    code, _ = run("batch", str(notes(tmp_path)), "--prompt", "{note}", "-p", "blocking", "-o", str(target))

    err = capsys.readouterr().err
    rescued = tmp_path / "labelled.rescued.jsonl"
    assert code == 1 and err.count("\n") == 1
    assert f"could not write {target}" in err and f"the 3 rows with their answers are in {rescued}" in err
    rows = [json.loads(line) for line in rescued.read_text(encoding="utf-8").splitlines()]
    assert [(row["id"], row["response"]) for row in rows] == [(i, f"ok note {i}") for i in range(3)]
    assert len(asked) == 3


# -- Ctrl-C, then the same command: only the rest is asked (issue 22 item 1) --------------------------------

INTERRUPTED_COMMAND = """
import os, sys
from aiforge import register_provider
from aiforge.cli import main

def answer(messages, **params):
    stop_after = int(os.environ.get("STOP_AFTER", "0"))
    with open(sys.argv[1], "a+", encoding="utf-8") as log:
        log.seek(0)
        if stop_after and len(log.read().splitlines()) >= stop_after:
            raise KeyboardInterrupt  # Ctrl-C while this row is asked: it is never answered
        log.write(messages[-1]["content"] + "\\n")
    return "ok " + messages[-1]["content"]

register_provider("counted", answer)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow
def test_ctrl_c_then_the_same_command_in_a_new_process_asks_only_the_rest(tmp_path) -> None:
    import os
    import subprocess
    import sys

    answered = tmp_path / "answered.txt"
    target = tmp_path / "out.csv"
    argv = [str(answered), "batch", str(notes(tmp_path, 20)), "--prompt", "{note}", "-p", "counted", "-c", "1",
            "-o", str(target)]
    command = [sys.executable, "-c", INTERRUPTED_COMMAND, *argv]

    first = subprocess.run(command, env={**os.environ, "STOP_AFTER": "6"}, capture_output=True, text=True)
    second = subprocess.run(command, capture_output=True, text=True)

    assert first.returncode == 130, first.stderr
    kept = first.stderr.strip().split("kept in ", 1)[1].split(";")[0]
    assert "batch interrupted: 6 of 20 rows finished and are kept in " in first.stderr
    assert "run the same command again to run only the other 14." in first.stderr
    assert second.returncode == 0, second.stderr
    assert answered.read_text(encoding="utf-8").splitlines() == [f"note {i}" for i in range(20)]  # each once
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id,note,response" and lines[1:] == [f"{i},note {i},ok note {i}" for i in range(20)]
    assert not os.path.exists(kept)  # the automatic checkpoint is removed once the result is written


def test_repeated_rows_are_asked_once_and_the_line_says_what_was_saved(
    sentiment_provider: list[str], tmp_path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "reviews.csv"
    source.write_text("id,review\n1,Love it!\n2,Broken.\n3,Love it!\n", encoding="utf-8")

    code, out = run("batch", str(source), "--prompt", "Sentiment of: {review}", "--labels", "pos,neg",
                    "-p", "sentiment")

    assert code == 0 and len(sentiment_provider) == 2
    assert out.splitlines()[1:] == ["1,Love it!,pos", "2,Broken.,neg", "3,Love it!,pos"]
    assert "3 of 3 rows answered, $0.0000; saved 1 of 3 requests" in capsys.readouterr().err


def test_a_refused_batch_leaves_no_checkpoint_folder_beside_the_store(tmp_path, monkeypatch, capsys) -> None:
    """A template naming no column is refused before any request, and the user's data folder gets nothing."""
    data = tmp_path / "data"
    monkeypatch.setenv("AIFORGE_STORE", str(data / "store.sqlite"))
    source = tmp_path / "reviews.csv"
    source.write_text("review\nGreat\nBad\n", encoding="utf-8")

    code, out = run("batch", str(source), "--prompt", "{reveiw}", "-p", "scripted")

    assert code == 2 and out == ""
    assert "no column 'reveiw'" in capsys.readouterr().err
    assert not (data / "batches").exists()
