"""The reference page's import paths (``aiforge.modules.chat``, ``aiforge.modules.base``): each re-exports its home."""
