"""Record ``11_sessions_and_logs.jsonl`` against the repository's fake server (``fakellm``) standing in for OpenAI.

    python notebooks/cassettes/record_11.py     # from the repository root; then refresh the notebook's outputs

The server speaks the real OpenAI protocol (the real SDK makes real HTTP requests); its answers are the ones
queued below, in the order the notebook asks. To record with the real OpenAI instead, delete the cassette, set
``OPENAI_API_KEY`` and run the notebook once (``REPLAY = "auto"`` calls and appends when a key is set).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from fakellm import LLMServer, Reply  # noqa: E402

NOTEBOOK = ROOT / "notebooks" / "11_sessions_and_logs.ipynb"
CASSETTE = ROOT / "notebooks" / "cassettes" / "11_sessions_and_logs.jsonl"
ANSWERS = [
    "I'm sorry your order #4411 arrived damaged. What is broken? I can send a replacement or refund you.",
    "Your order number is #4411.",
    "Thank you. I've arranged a replacement glass shade for order #4411; it ships within 3 business days.",
    "The replacement ships within 3 business days, so it should reach you in about a week.",
    "Yes, we ship to Canada. Delivery takes 7 to 10 business days.",
]


def main() -> None:
    CASSETTE.unlink(missing_ok=True)
    with LLMServer(chunk_size=12) as server:
        server.enqueue(*(Reply(text) for text in ANSWERS))
        os.environ.update(OPENAI_API_KEY="sk-local-test-server", OPENAI_BASE_URL=server.openai_base_url,
                          TQDM_DISABLE="1")
        nb = nbformat.read(NOTEBOOK, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
        assert len(server.requests) == len(ANSWERS), f"{len(server.requests)} requests, {len(ANSWERS)} answers"
    print(f"{CASSETTE}: {len(CASSETTE.read_text().splitlines())} exchanges")


if __name__ == "__main__":
    main()
