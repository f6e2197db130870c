"""The ``current_time`` tool: the date and time now in an IANA time zone, as ISO 8601.

Like every built-in tool it returns text and never raises: a failure comes back as "Error: ...".
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from langchain_core.tools import StructuredTool


def _find_zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        pass
    # Models often write "utc" or "europe/paris"; the zone database is case-sensitive on most systems.
    matches = [key for key in available_timezones() if key.lower() == name.lower()]
    return ZoneInfo(matches[0]) if matches else None


def _current_time(timezone: str = "UTC") -> str:
    """Return the current date and time in a time zone as ISO 8601 with the UTC offset.

    Use it whenever the answer depends on today's date or the time of day, e.g. "2025-03-14T09:26:53+01:00".

    Args:
        timezone: An IANA time zone name such as "UTC", "Europe/Paris" or "America/New_York".
    """
    zone = _find_zone(timezone.strip())
    if zone is None:
        return f"Error: unknown time zone '{timezone}' (use an IANA name such as 'Europe/Paris')"
    return datetime.now(zone).isoformat(timespec="seconds")


current_time = StructuredTool.from_function(_current_time, name="current_time", parse_docstring=True)
