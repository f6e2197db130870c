"""TPM pacing counts a request's files as the provider's rules do (``core.file_rules.marker_tokens``), not as the
~41 characters of their markers: a batch of images under a low TPM waits as their image tokens say. The pace is
checked on a fake clock that moves only when the pacer sleeps: the waits are counted, never timed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from aiforge import ChatAgent, File
from aiforge.core.file_markers import remember
from aiforge.core.file_rules import marker_tokens
from aiforge.core.files import read_file
from aiforge.providers import pacing
from fakellm import LLMServer
from tests.providers.conftest import SECRET

pytest.importorskip("PIL")
pytest.importorskip("fpdf")

from tests.support.documents import png  # noqa: E402 - needs Pillow, skipped above without it
from tests.support.fake_time import FakeTime  # noqa: E402

TPM = 2000
MODEL = "gpt-4o"
IMAGE_TOKENS = 765  # OpenAI's worked example: 1024 x 1024 at high detail, 768 x 768 read, 4 tiles: 85 + 170 * 4


@pytest.fixture
def images(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"photo{seed}.png" for seed in range(3)]
    for seed, path in enumerate(paths):
        png(1024, 1024, path, seed=seed)
    return paths


def test_a_marker_counts_as_its_image_by_the_providers_rules(images: list[Path]) -> None:
    digest = read_file(images[0]).digest
    remember(read_file(images[0]))
    assert marker_tokens(digest, "openai", MODEL, "auto") == IMAGE_TOKENS
    assert marker_tokens("0" * 32, "openai", MODEL, "auto") == 0  # a file no prompt named: its row fails when sent


async def test_the_pacer_reserves_an_image_requests_image_tokens(images: list[Path]) -> None:
    fake = FakeTime()
    pacer = pacing.Pacer(clock=lambda: fake.now, sleep=fake.sleep)
    pacer.configure(None, TPM)
    messages = [[{"role": "user", "content": f"Describe {remember(read_file(path))}"}] for path in images]
    counted = lambda digest: marker_tokens(digest, "openai", MODEL, "auto")  # noqa: E731

    reserved = [await pacer.acquire(m, 10, counted) for m in messages]

    assert reserved == [pytest.approx(len("Describe ") / 4 + IMAGE_TOKENS + 10)] * 3
    # A full bucket holds BURST x TPM; the third image is over it by what it reserved past it, refilled at the pace.
    over = sum(reserved) - pacing.BURST * TPM
    assert fake.waits == [pytest.approx(over / (pacing.SAFETY * TPM / pacing.WINDOW))]
    without = pacing.Pacer(clock=lambda: fake.now, sleep=fake.sleep)
    without.configure(None, TPM)
    assert [await without.acquire(m, 10) for m in messages] == [pytest.approx((9 + 41) / 4 + 10)] * 3
    assert len(fake.waits) == 1  # counted by their markers' characters, three images went at once


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        # A port an earlier test's server had keeps that test's pacer in the process: start from none.
        for key in [k for k in pacing._pacers if urlsplit(k[1]).netloc == urlsplit(srv.base_url).netloc]:
            del pacing._pacers[key]
        yield srv


def test_a_batch_of_images_under_a_low_tpm_waits_for_their_image_tokens(server: LLMServer, images: list[Path]) -> None:
    agent = ChatAgent(
        PROVIDER="openai", MODEL=MODEL, OPENAI_API_KEY=SECRET, OPENAI_BASE_URL=server.openai_base_url, TPM=TPM,
        MAX_TOKENS=10, MAX_RETRIES=0, FILE_INPUT="native",
    )  # fmt: skip
    fake = FakeTime()
    pacer = agent.provider._pacer  # the process's pacer for this server and key, on the fake clock
    pacer._clock, pacer._sleep = (lambda: fake.now), fake.sleep

    batch = agent.run_batch([File(path) for path in images], prompt="Describe {value}", concurrency=1, cache=False)

    assert not batch.failed and batch.requests == 3
    # 3 x ~777 tokens against a bucket of 1800: the third request waits, once (as 41-character markers, none did).
    assert len(fake.waits) == 1 and fake.waits[0] > 0
