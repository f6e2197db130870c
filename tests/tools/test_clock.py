"""The current_time tool, invoked through the StructuredTool interface as the agent invokes it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiforge.tools import current_time


def test_current_time_defaults_to_utc() -> None:
    now = datetime.fromisoformat(current_time.invoke({}))
    assert now.utcoffset() == timedelta(0)


def test_current_time_reports_the_zone_offset() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "Etc/GMT-5"}))
    assert now.utcoffset() == timedelta(hours=5)


def test_current_time_is_now() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "Europe/Paris"}))
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)


def test_current_time_accepts_zone_names_in_any_case() -> None:
    now = datetime.fromisoformat(current_time.invoke({"timezone": "etc/gmt-5"}))
    assert now.utcoffset() == timedelta(hours=5)


def test_current_time_reports_an_unknown_zone() -> None:
    assert current_time.invoke({"timezone": "Mars/Base"}).startswith("Error: unknown time zone 'Mars/Base'")
