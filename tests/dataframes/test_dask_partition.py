"""partition_columns over plain pandas partitions, as Ray Data's map_batches and Spark's mapInPandas call it."""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import aiforge  # noqa: F401 - registers the accessor
from aiforge import ChatAgent
from aiforge.core.types import UsageError
from aiforge.dataframes.partition import PartitionSpec, partition_columns, process_agent
from fakellm import LLMServer, RecordedRequest, Reply

KEY = "sk-partition-secret-42"


def answer(request: RecordedRequest) -> Reply:
    number = int(request.last_user_text.rsplit("#", 1)[1].split()[0])
    if request.output_schema:
        return Reply(output={"value": number % 2 == 0} if "properties" in request.output_schema else number % 2 == 0)
    return Reply(text=f"echo {number}")


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    # One server for the module: the process's agent, built once, keeps the endpoint it was built with.
    # Agents an earlier test module built in this process point at its (closed) server: start without them.
    from aiforge.dataframes import partition

    with partition._agents_lock:
        partition._agents.clear()
    with LLMServer(default=answer) as srv:
        yield srv


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, server: LLMServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)


SETTINGS = {"provider": "openai", "model": "gpt-4o-mini", "MAX_RETRIES": 0}


def rows(start: int, count: int) -> pd.DataFrame:
    index = pd.Index(range(start, start + count), name="id")
    return pd.DataFrame({"review": [f"review #{i}" for i in index]}, index=index)


def test_partitions_give_the_pandas_accessors_columns_and_the_spec_is_picklable(server: LLMServer) -> None:
    spec = pickle.loads(pickle.dumps(PartitionSpec.of("map", "Summarise: {review}", cache=False, **SETTINGS)))
    frame = rows(0, 12)
    # What Ray's ds.map_batches(fn, batch_format="pandas") or Spark's mapInPandas hands over: frames of rows.
    parts = [partition_columns(frame.iloc[i : i + 5], spec) for i in range(0, 12, 5)]
    agent = ChatAgent(memory="none", **SETTINGS)
    expected = frame.aiforge.map("Summarise: {review}", agent=agent, cache=False)
    pd.testing.assert_frame_equal(pd.concat(parts), expected)
    assert parts[0].attrs["aiforge"].indices == [0, 1, 2, 3, 4]


def test_filter_gives_a_keep_column_and_an_empty_partition_makes_no_call(server: LLMServer) -> None:
    spec = PartitionSpec.of("filter", "Even? {review}", cache=False, **SETTINGS)
    keep = partition_columns(rows(3, 4), spec)
    assert keep["keep"].tolist() == [False, True, False, True]
    server.reset()
    empty = partition_columns(rows(0, 0), spec)
    assert list(empty.columns) == ["keep"] and empty["keep"].dtype == bool and server.request_count == 0


def test_the_agent_is_built_once_per_process_and_settings(server: LLMServer) -> None:
    assert process_agent(SETTINGS) is process_agent(dict(SETTINGS))
    assert process_agent(SETTINGS) is not process_agent({**SETTINGS, "model": "gpt-4o"})


def test_each_partition_keeps_its_rows_in_a_file_beside_the_checkpoint_and_a_rerun_asks_nothing(
    server: LLMServer, tmp_path: Path
) -> None:
    """One writer per file: partitions run in worker processes, perhaps on other hosts, and SQLite's write-ahead
    log needs every writer of a file on one host."""
    spec = PartitionSpec.of("map", "{review}", cache=False, checkpoint=tmp_path / "ck.sqlite", **SETTINGS)
    first, second = rows(0, 3), rows(3, 3)
    partition_columns(first, spec)
    partition_columns(second, spec)
    files = sorted(path.name for path in tmp_path.glob("*.sqlite"))
    assert len(files) == 2 and all(name.startswith("ck.partition-") for name in files)
    server.reset()
    again = partition_columns(second, spec)
    assert server.request_count == 0 and again["response"].tolist() == ["echo 3", "echo 4", "echo 5"]


def test_a_checkpoint_folder_is_refused_on_the_client(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=rf"^map: checkpoint= is one file .*{tmp_path} is a folder"):
        PartitionSpec.of("map", "{review}", checkpoint=tmp_path, **SETTINGS)


def test_a_key_in_the_spec_is_refused() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        PartitionSpec.of("map", "{review}", OPENAI_API_KEY=KEY)


def test_ddf_aiforge_is_registered_when_dask_is_imported_after_aiforge() -> None:
    code = (
        "import sys, aiforge; before = 'dask' in sys.modules; import dask.dataframe as dd; "
        "waiting = any('ImportFinder' in type(f).__name__ for f in sys.meta_path); "
        "print(before, hasattr(dd.DataFrame, 'aiforge'), waiting)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False True False"


def test_a_partition_draws_no_progress_bar(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # A worker's stderr shows in JupyterLab as a box of stale bars: the engine's (client's) bar is the one shown.
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    spec = PartitionSpec.of("map", "{review}", cache=False, **{**SETTINGS, "PROGRESS_BAR": True})
    columns = partition_columns(rows(0, 4), spec)
    assert columns["response"].tolist() == ["echo 0", "echo 1", "echo 2", "echo 3"]
    assert capfd.readouterr() == ("", "")
    # The same batch in the notebook's own process (run_batch, df.aiforge) still shows its bar.
    ChatAgent(memory="none", **SETTINGS).run_batch(["review #7"])
    assert "aiforge batch" in capfd.readouterr().err


def test_a_cascade_or_a_plan_in_the_spec_is_refused_in_one_line() -> None:
    # A Cascade holds agents (and their keys): it failed to pickle with "cannot pickle '_thread.lock'", and each
    # partition would have calibrated its own sample.
    from aiforge import Cascade

    cascade = Cascade(first=ChatAgent(provider="scripted"))
    with pytest.raises(UsageError, match="cascade= and plan= work on the whole batch"):
        PartitionSpec.of("classify", "{review}", labels=["a", "b"], cascade=cascade)
    with pytest.raises(UsageError, match="cascade= and plan= work on the whole batch"):
        PartitionSpec.of("classify", "{review}", labels=["a", "b"], plan="cheapest")
