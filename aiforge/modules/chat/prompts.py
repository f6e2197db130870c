"""The reference page's home of the prompt templates; they live in ``aiforge.chat.prompts``."""

from aiforge.chat import prompts as _home
from aiforge.chat.prompts import *  # noqa: F403 - the same names, listed once in the home module

__all__ = _home.__all__
