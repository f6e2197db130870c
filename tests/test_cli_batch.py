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


def test_a_failed_row_keeps_its_error_and_the_others_their_answers(tmp_path) -> None:
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


def test_batch_cache_file_answers_a_rerun_without_asking(sentiment_provider: list[str], tmp_path) -> None:
    argv = ("batch", REVIEWS, "--prompt", "Sentiment of: {review}", "--labels", "pos,neg", "-p", "sentiment",
            "--cache", str(tmp_path / "cache.sqlite"))

    first = run(*argv)
    second = run(*argv)

    assert first == second and first[0] == 0 and len(sentiment_provider) == 60
